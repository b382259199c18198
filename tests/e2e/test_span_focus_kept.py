"""The keyboard's place on the span page: Esc out of a note, Delete and Ctrl+Z keep the focus on the span list (or the
summary), never on the page's start; the Flag form keeps a draft across Esc; and a word step by keyboard crosses a
whole number such as 38,000 or 12.4."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Sample, SampleFlag, SpanAnnotation
from tests.e2e.annotation_helpers import CARET, eventually, make_span, open_sample, select, select_words

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

FOCUS_ON_BODY = "document.activeElement === document.body"


def test_escape_in_a_note_leaves_the_focus_on_that_spans_item(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    select_words(page, "summary", sample.summary, "national government")
    page.keyboard.press("2")
    expect(page.locator("[data-span-id]")).to_have_count(1)

    page.keyboard.press("E")
    page.keyboard.type("Paid by the council.")
    page.keyboard.press("Escape")

    expect(page.locator("[data-span-id]")).to_be_focused()
    page.keyboard.press("3")  # the keys work again, on that span
    assert eventually(lambda: SpanAnnotation.objects.filter(labels=["Questionable"], note="Paid by the council.").exists())


def test_delete_moves_the_focus_to_the_next_span_and_ctrl_z_to_the_span_brought_back(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    first = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    second = make_span(sample, alice, "national government", ["Benign"])
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.click(f'[data-span-id="{first.pk}"]')
    expect(page.locator(f'[data-span-id="{first.pk}"]')).to_be_focused()

    page.keyboard.press("Delete")
    expect(page.locator(f'[data-span-id="{second.pk}"]')).to_be_focused()
    assert eventually(lambda: not SpanAnnotation.objects.filter(pk=first.pk).exists())

    page.keyboard.press("Control+z")
    back = page.locator('[data-role="span-list"] li.active')
    expect(back).to_contain_text("nine weeks")
    expect(back).to_be_focused()
    assert eventually(lambda: SpanAnnotation.objects.filter(text="nine weeks").exists())

    # The last span deleted from its item: the summary takes the focus.
    page.keyboard.press("Delete")
    page.locator(f'[data-span-id="{second.pk}"]').focus()
    page.keyboard.press("Enter")
    page.keyboard.press("Delete")
    expect(page.locator('[data-role="summary"]')).to_be_focused()
    assert not page.evaluate(FOCUS_ON_BODY)


def test_the_delete_button_leaves_the_focus_on_the_summary(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.click(f'[data-span-id="{span.pk}"]')
    page.locator('[data-role="span-editor"] [data-role="delete"]').focus()

    page.keyboard.press("Enter")

    expect(page.locator('[data-role="summary"]')).to_be_focused()
    page.keyboard.press("Control+z")  # the span comes back; the focus stays on the summary
    expect(page.locator('[data-role="span-list"] li.active')).to_contain_text("nine weeks")
    expect(page.locator('[data-role="summary"]')).to_be_focused()


def test_the_flag_form_keeps_its_draft_across_escape_until_it_is_sent(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    form = page.locator('[data-role="flag-form"]')
    comment = form.locator("textarea")

    page.click('[data-role="flag"]')
    form.locator('input[value="skip"]').check()
    comment.fill("The summary is about another bridge")
    comment.press("Escape")
    expect(form).to_be_hidden()

    page.click('[data-role="flag"]')
    expect(comment).to_have_value("The summary is about another bridge")
    expect(form.locator('input[value="skip"]')).to_be_checked()
    comment.press("End")
    comment.type(".")
    form.locator('[data-role="flag-submit"]').click()
    flag = eventually(lambda: SampleFlag.objects.filter(sample=sample, annotator=alice).first())
    assert flag and flag.comment == "The summary is about another bridge."

    page.click('[data-role="flag"]')
    expect(comment).to_have_value("The summary is about another bridge.")


def test_word_steps_cross_numbers_written_with_a_comma_or_a_point(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    summary = "A 38,000-pound statue of 12.4 m fell in 1999. Nobody was hurt."
    sample = Sample.objects.create(project=batch.project, passage=batch.samples.first().passage, batch=batch,
                                   position=10, external_id="numbers", summary=summary, generator="model-n")
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.focus('[data-role="summary"]')

    def caret_after(at: int, keys: str) -> int:
        select(page, "summary", at, at)
        page.keyboard.press(keys)
        return page.evaluate(CARET)

    start = summary.index("38,000")
    assert caret_after(start, "Control+ArrowRight") == start + len("38,000-pound")
    assert caret_after(start + len("38,000-pound"), "Control+ArrowLeft") == start
    assert caret_after(summary.index("12.4"), "Control+ArrowRight") == summary.index(" m fell")
    # A sentence's full stop after a number is no part of it.
    assert caret_after(summary.index("1999"), "Control+ArrowRight") == summary.index(". Nobody")

    select(page, "summary", start, start)
    page.keyboard.press("Shift+Control+ArrowRight")
    assert page.evaluate("window.getSelection().toString()") == "38,000-pound"
