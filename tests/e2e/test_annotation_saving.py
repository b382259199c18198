"""The annotation page in a real browser: saving spans with the mouse and the keys, notes that autosave,
links to the source, conflicts with another tab, retries and the save status."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from playwright.sync_api import Page, Route, expect

from annotate.models import Sample, SampleReview, SpanAnnotation
from tests.e2e.annotation_helpers import (
    eventually,
    make_span,
    open_sample,
    sample_url,
    saved_spans,
    select_words,
)

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


# ---------- saving spans ----------


def test_clicking_a_label_saves_the_selected_span_at_once(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)

    select_words(page, "summary", sample.summary, "nine weeks")
    page.click('[data-label="Unwanted.Intrinsic"]')

    expect(page.locator("[data-span-id]")).to_have_count(1)
    (span,) = saved_spans(sample, alice)
    start = sample.summary.index("nine weeks")
    assert (span.start, span.end, span.text) == (start, start + len("nine weeks"), "nine weeks")
    assert span.labels == ["Unwanted", "Unwanted.Intrinsic"]
    assert span.round == 1
    expect(page.locator(f'[data-span-id="{span.pk}"]')).to_contain_text("Unwanted.Intrinsic")
    expect(page.locator('[data-role="summary"] .seg.cat-U')).to_have_text("nine weeks")
    expect(page.locator('[data-role="save-status"]')).to_have_text("Saved")


def test_hotkeys_one_to_four_save_spans_with_their_labels(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    choices = [
        ("1", "nine weeks", ["Unwanted", "Unwanted.Intrinsic"]),
        ("2", "national government", ["Unwanted", "Unwanted.Extrinsic"]),
        ("3", "Lintown's", ["Questionable"]),
        ("4", "12.4 million euro project", ["Benign"]),
    ]
    for count, (key, words, _) in enumerate(choices, start=1):
        select_words(page, "summary", sample.summary, words)
        page.keyboard.press(key)
        expect(page.locator("[data-span-id]")).to_have_count(count)

    saved = {span.text: span.labels for span in saved_spans(sample, alice)}
    assert saved == {words: labels for _, words, labels in choices}
    for category in ("U", "Q", "B"):
        assert page.locator(f'[data-role="summary"] .seg.cat-{category}').count() >= 1


def test_hotkeys_are_inactive_while_typing_in_the_note(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)

    page.click(f'[data-span-id="{span.pk}"]')
    note = page.locator('[data-role="note"]')
    note.click()
    note.press_sequentially("1 2 3 4 d n ] ? Backspace")
    page.keyboard.press("Backspace")

    expect(note).to_have_value("1 2 3 4 d n ] ? Backspac")
    expect(page.locator('[data-role="shortcuts"]')).to_be_hidden()
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).note == "1 2 3 4 d n ] ? Backspac")
    span.refresh_from_db()
    assert span.labels == ["Unwanted", "Unwanted.Intrinsic"]
    assert SpanAnnotation.objects.count() == 1
    assert not SampleReview.objects.exists()
    assert page.url.startswith(sample_url(live_server, sample))


def save_a_span_by_keyboard(page: Page, live_server: Any, log_in: Any, user: Any, sample: Sample) -> None:
    """Log in, open the sample, select "national government" and press 2 (Unwanted.Extrinsic)."""
    log_in(page, user)
    open_sample(page, live_server, sample)
    select_words(page, "summary", sample.summary, "national government")
    page.keyboard.press("2")
    expect(page.locator("[data-span-id]")).to_have_count(1)


def test_note_autosaves_and_is_there_after_reload(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    save_a_span_by_keyboard(page, live_server, log_in, alice, sample)

    page.locator('[data-role="note"]').fill("Source: paid by the regional council.")
    (span,) = saved_spans(sample, alice)
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).note == "Source: paid by the regional council.")
    expect(page.locator('[data-role="save-status"]')).to_have_text("Saved")

    page.reload()
    item = page.locator(f'[data-span-id="{span.pk}"]')
    expect(item).to_contain_text("Source: paid by the regional council.")
    item.click()
    expect(page.locator('[data-role="note"]')).to_have_value("Source: paid by the regional council.")


def test_e_jumps_into_the_new_spans_note_and_escape_gives_the_keys_back(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    save_a_span_by_keyboard(page, live_server, log_in, alice, sample)
    page.keyboard.press("E")
    expect(page.locator('[data-role="note"]')).to_be_focused()
    page.keyboard.type("Eight weeks in the source.")  # the E typed into the note is text, not a shortcut
    page.keyboard.press("Escape")
    expect(page.locator('[data-role="note"]')).not_to_be_focused()
    (span,) = saved_spans(sample, alice)
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).note == "Eight weeks in the source.")
    page.keyboard.press("3")  # hotkeys work again: relabels the active span
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).labels == ["Questionable"])


def test_reload_keeps_overlapping_spans(page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample) -> None:
    outer = make_span(sample, alice, "after nine weeks of repairs", ["Questionable"])
    inner = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)

    expect(page.locator("[data-span-id]")).to_have_count(2)
    expect(page.locator(f'[data-span-id="{outer.pk}"]')).to_contain_text("Questionable")
    expect(page.locator(f'[data-span-id="{inner.pk}"]')).to_contain_text("Unwanted.Intrinsic")
    overlap = page.locator('[data-role="summary"] .seg.overlap')
    expect(overlap).to_have_text("nine weeks")
    assert "cat-U" in overlap.get_attribute("class")  # the worse label wins the tint
    assert page.locator('[data-role="summary"]').text_content() == sample.summary

    # Clicking the overlap picks the innermost span; clicking again cycles to the outer one.
    overlap.click()
    expect(page.locator(f'[data-span-id="{inner.pk}"]')).to_have_class("span-item cat-U active")
    page.locator('[data-role="summary"] .seg.overlap').click()
    expect(page.locator(f'[data-span-id="{outer.pk}"]')).to_have_class("span-item cat-Q active")


def test_active_span_label_changes_with_a_hotkey_and_sends_its_version(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)

    page.click(f'[data-span-id="{span.pk}"]')
    page.keyboard.press("3")
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).labels == ["Questionable"])
    page.click('[data-label="Benign"]')
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).labels == ["Benign"])
    span.refresh_from_db()
    assert span.version == 3
    assert SpanAnnotation.objects.count() == 1
    expect(page.locator(f'[data-span-id="{span.pk}"]')).to_contain_text("Benign")


def test_delete_with_the_button_and_with_the_delete_key(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    first = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    second = make_span(sample, alice, "national government", ["Unwanted", "Unwanted.Extrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)

    page.click(f'[data-span-id="{first.pk}"]')
    page.click('[data-role="delete"]')
    expect(page.locator(f'[data-span-id="{first.pk}"]')).to_have_count(0)
    assert eventually(lambda: not SpanAnnotation.objects.filter(pk=first.pk).exists())

    page.click(f'[data-span-id="{second.pk}"]')
    page.keyboard.press("Delete")
    expect(page.locator("[data-span-id]")).to_have_count(0)
    assert eventually(lambda: not SpanAnnotation.objects.exists())
    expect(page.locator('[data-role="summary"] .seg')).to_have_count(0)
    page.reload()
    expect(page.locator('[data-role="no-spans"]')).to_be_visible()


def test_linking_source_text_with_l_and_by_clicking_a_shaded_sentence(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample, embedded: Any
) -> None:
    sample.refresh_from_db()
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)
    source = sample.passage.text

    page.click(f'[data-span-id="{span.pk}"]')
    select_words(page, "source", source, "eight weeks")
    page.keyboard.press("l")
    start = source.index("eight weeks")
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).source_start == start)
    span.refresh_from_db()
    assert (span.source_end, span.source_text) == (start + len("eight weeks"), "eight weeks")
    expect(page.locator('[data-role="source"] .seg.linked')).to_have_text("eight weeks")

    # Activating the span shaded the source; a click on a shaded sentence links all of it.
    third = page.locator('[data-role="source"] [data-sentence="2"]')
    expect(page.locator('[data-role="source"] [data-sentence="2"][data-similarity]')).to_have_count(1)
    third.click()
    s, e = sample.passage.sentences[2]
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).source_start == s)
    span.refresh_from_db()
    assert (span.source_end, span.source_text) == (e, source[s:e])
    expect(page.locator(f'[data-span-id="{span.pk}"]')).to_contain_text(source[s:e])


# ---------- versions, status, retries ----------


def test_stale_tab_shows_a_conflict_and_keeps_the_newer_note(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"], note="first thought")
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.click(f'[data-span-id="{span.pk}"]')

    # Another tab saves a newer note (tried again while the server's thread holds the test database's lock).
    assert eventually(lambda: SpanAnnotation.objects.filter(pk=span.pk).update(note="newer note from the other tab",
                                                                                 version=2))

    page.locator('[data-role="note"]').fill("stale edit")
    expect(page.locator('[data-role="notice"]')).to_contain_text("changed in another tab — reloaded")
    expect(page.locator('[data-role="note"]')).to_have_value("newer note from the other tab")
    time.sleep(0.8)
    span.refresh_from_db()
    assert (span.note, span.version) == ("newer note from the other tab", 2)

    # The page adopted version 2: the next edit saves.
    page.locator('[data-role="note"]').fill("merged note")
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).note == "merged note")
    assert SpanAnnotation.objects.get(pk=span.pk).version == 3


def test_a_note_typed_on_a_span_deleted_elsewhere_is_shown_not_lost(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    """The note's PATCH meets a span another tab deleted (404): the page drops the span, as before, and the notice
    gives the note typed here back, as it does when a 409 says the span is gone."""
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"], note="first thought")
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.click(f'[data-span-id="{span.pk}"]')
    assert eventually(lambda: SpanAnnotation.objects.filter(pk=span.pk).delete()[0] == 1)

    page.locator('[data-role="note"]').fill("a note worth keeping")
    notice = page.locator('[data-role="notice"]')
    expect(notice).to_contain_text("deleted in another tab")
    expect(notice).to_contain_text("a note worth keeping")
    expect(page.locator(f'[data-span-id="{span.pk}"]')).to_have_count(0)
    assert not SpanAnnotation.objects.filter(sample=sample).exists()


def test_stale_delete_adopts_the_newer_span(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)
    SpanAnnotation.objects.filter(pk=span.pk).update(labels=["Benign"], version=5)

    page.click(f'[data-span-id="{span.pk}"]')
    page.keyboard.press("Delete")

    expect(page.locator('[data-role="notice"]')).to_contain_text("changed in another tab — reloaded")
    expect(page.locator(f'[data-span-id="{span.pk}"]')).to_contain_text("Benign")
    assert SpanAnnotation.objects.filter(pk=span.pk, version=5).exists()


def test_server_errors_are_retried_and_the_status_says_so(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    failures = {"left": 2}

    def flaky(route: Route) -> None:
        if route.request.method == "POST" and failures["left"] > 0:
            failures["left"] -= 1
            route.fulfill(status=503, body="busy")
        else:
            route.continue_()

    page.route("**/api/spans/", flaky)
    status = page.locator('[data-role="save-status"]')
    select_words(page, "summary", sample.summary, "nine weeks")
    page.keyboard.press("1")

    expect(status).to_have_text("Failed — retrying")
    expect(page.locator("[data-span-id]")).to_have_count(1)
    expect(status).to_have_text("Saved")
    assert len(saved_spans(sample, alice)) == 1


def test_client_errors_show_the_servers_message(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.route(
        "**/api/spans/",
        lambda route: route.fulfill(
            status=400, content_type="application/json",
            body=json.dumps({"labels": ["unknown label 'Nonsense'"]}),
        ),
    )
    select_words(page, "summary", sample.summary, "nine weeks")
    page.keyboard.press("1")

    status = page.locator('[data-role="save-status"]')
    expect(status).to_have_attribute("data-state", "failed")
    expect(status).to_contain_text("labels: unknown label 'Nonsense'")
    expect(page.locator('[data-role="span-list"] [data-role="retry"]')).to_be_visible()

    page.unroute("**/api/spans/")
    page.click('[data-role="span-list"] [data-role="retry"]')
    expect(page.locator("[data-span-id]")).to_have_count(1)
    expect(status).to_have_text("Saved")


def test_leaving_the_page_warns_while_a_save_is_pending(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    held: list[Route] = []
    page.route("**/api/spans/", lambda route: held.append(route))
    warns = "() => { const e = new Event('beforeunload', {cancelable: true}); window.dispatchEvent(e); return e.defaultPrevented; }"
    assert page.evaluate(warns) is False

    select_words(page, "summary", sample.summary, "nine weeks")
    page.keyboard.press("1")
    expect(page.locator('[data-role="save-status"]')).to_have_text("Saving…")
    assert page.evaluate(warns) is True

    page.wait_for_function("() => true")
    assert held, "the span POST was sent"
    held[0].continue_()
    expect(page.locator("[data-span-id]")).to_have_count(1)
    expect(page.locator('[data-role="save-status"]')).to_have_text("Saved")
    assert page.evaluate(warns) is False
