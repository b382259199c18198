"""Keyboard-first on the span page, from the first key: the summary holds the focus as a sample appears, a label key
pressed at once still shades the new span's source, letter keys work with Caps Lock on, and a label key on a frozen
page says why nothing happens."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Sample, SpanAnnotation
from annotate.services import spans
from annotate.taxonomy import default_taxonomy
from tests.e2e.annotation_helpers import eventually, open_sample, saved_spans, select_words, wait_until_settled

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SUMMARY = '[data-role="summary"]'
NOTICE = '[data-role="notice"]'


def test_the_summary_has_the_focus_as_each_sample_appears(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    first, second, _ = batch.samples.order_by("position")
    log_in(page, alice)
    open_sample(page, live_server, first)

    expect(page.locator(SUMMARY)).to_be_focused()
    assert page.evaluate("window.scrollY") == 0
    # No click and no Tab: the word keys select at once, from the summary's start.
    page.keyboard.press("Control+Shift+ArrowRight")
    page.keyboard.press("Control+Shift+ArrowRight")
    first_words = " ".join(first.summary.split()[:2])
    assert page.evaluate("window.getSelection().toString()") == first_words
    page.keyboard.press("1")
    assert eventually(lambda: saved_spans(first, alice))
    (span,) = saved_spans(first, alice)
    assert (span.start, span.text) == (0, first_words)

    # The other keys work as before: D moves on, and the next sample's summary has the focus again.
    wait_until_settled(page)
    page.keyboard.press("d")
    page.wait_for_url(f"**{reverse('sample', args=[batch.project.slug, second.pk])}?round=1")
    expect(page.locator("#annotator.ready")).to_be_visible()
    expect(page.locator(SUMMARY)).to_be_focused()
    page.keyboard.press("Control+ArrowRight")
    page.keyboard.press("Shift+Control+ArrowRight")
    assert page.evaluate("window.getSelection().toString()") == second.summary.split()[1]
    page.keyboard.press("?")
    expect(page.locator('[data-role="shortcuts"]')).to_be_visible()


def test_a_label_key_pressed_at_once_shades_the_new_span(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample, embedded: Any
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)

    select_words(page, "summary", sample.summary, "nine weeks")
    page.keyboard.press("1")  # before the page asked for the selection's shading

    expect(page.locator("[data-span-id]")).to_have_count(1)
    expect(page.locator('[data-role="source"] [data-sentence][data-similarity]').first).to_be_attached()
    expect(page.locator('[data-role="source"] .closest').first).to_be_attached()
    assert page.locator('[data-role="span-list"] li.active').count() == 1


def caps_project(batch: Any) -> None:
    """Questionable on q and Benign on b: letter hotkeys, which Caps Lock turns into Q and B."""
    taxonomy = default_taxonomy()
    for label in taxonomy["labels"]:
        label["hotkey"] = {"Questionable": "q", "Benign": "b"}.get(label["name"], label["hotkey"])
    batch.project.taxonomy = taxonomy
    batch.project.save(update_fields=["taxonomy"])


# A key as Caps Lock sends it: keyboard.press("Q") gives key "Q" without Shift; Shift with Caps Lock on gives the
# lower case, which Playwright's keyboard cannot send, so that one is dispatched as the browser would.
CAPS_SHIFT_KEY = """(key) => document.activeElement.dispatchEvent(new KeyboardEvent("keydown", {
  key, code: "Key" + key.toUpperCase(), shiftKey: true, bubbles: true, cancelable: true, modifierCapsLock: true}))"""


def test_letter_keys_work_with_caps_lock_on(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    caps_project(batch)
    first, second, _ = batch.samples.order_by("position")
    log_in(page, alice)
    open_sample(page, live_server, first)

    select_words(page, "summary", first.summary, "nine weeks")
    page.keyboard.press("Q")
    assert eventually(lambda: saved_spans(first, alice))
    (span,) = saved_spans(first, alice)
    assert span.labels == ["Questionable"]

    # Shift+b with Caps Lock on arrives as "b" with Shift: still Shift+b, which adds Benign rather than replacing.
    page.evaluate(CAPS_SHIFT_KEY, "b")
    assert eventually(lambda: set(SpanAnnotation.objects.get(pk=span.pk).labels) == {"Questionable", "Benign"}), (
        SpanAnnotation.objects.get(pk=span.pk).labels
    )
    expect(page.locator('[data-label="Benign"]')).to_have_attribute("aria-pressed", "true")
    expect(page.locator('[data-label="Questionable"]')).to_have_attribute("aria-pressed", "true")

    # The sample keys too: N is n.
    page.keyboard.press("Escape")
    page.keyboard.press("N")
    page.wait_for_url(f"**{reverse('sample', args=[batch.project.slug, second.pk])}?round=1")
    expect(page.locator("#annotator.ready")).to_be_visible()
    page.keyboard.press("P")
    page.wait_for_url(f"**{reverse('sample', args=[batch.project.slug, first.pk])}?round=1")


def test_a_label_key_on_a_frozen_page_says_why_nothing_is_saved(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    first = batch.samples.order_by("position").first()
    for each in batch.samples.all():
        spans.mark_sample_done(each, alice, round=1, done=True)  # the last submits the round: frozen
    log_in(page, alice)
    open_sample(page, live_server, first)

    select_words(page, "summary", first.summary, "nine weeks")
    page.keyboard.press("1")

    notice = page.locator(NOTICE)
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("Nothing was saved: this round is read-only. You submitted round 1 of batch-1")
    time.sleep(0.3)
    assert not saved_spans(first, alice)
