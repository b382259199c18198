"""Keys of the annotation page that cannot act say why instead of doing nothing: E and Delete with no span chosen (as
L does), [ / ] at the ends of the batch, Shift+D on a sample not marked done, and Ctrl+Z with no deleted span to bring
back (as u says on the pair and audit pages). Where they can act they work as before."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Batch, Sample, SampleReview
from tests.e2e.annotation_helpers import eventually, open_sample, saved_spans, select_words, wait_until_settled

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

NOTICE = '[data-role="notice"]'


def test_e_without_a_chosen_span_says_to_choose_one(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)

    page.keyboard.press("e")

    expect(page.locator(NOTICE)).to_have_text(
        "Choose a span first (click it in the list or the summary, or press Alt+↓ / Alt+↑), then press E to write its "
        "note."
    )
    expect(page.locator('[data-role="summary"]')).to_be_focused()  # where the page put it: E went nowhere

    # With a span chosen, E goes into its note as before.
    select_words(page, "summary", sample.summary, "nine weeks")
    page.keyboard.press("1")
    expect(page.locator('[data-role="span-list"] li')).to_have_count(1)
    page.keyboard.press("e")
    expect(page.locator('textarea[data-role="note"]')).to_be_focused()


def test_brackets_at_the_ends_of_the_batch_say_so(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Batch
) -> None:
    first, _, last = batch.samples.order_by("position")
    log_in(page, alice)
    open_sample(page, live_server, first)

    page.keyboard.press("[")
    expect(page.locator(NOTICE)).to_have_text("This is the first sample of batch-1.")

    open_sample(page, live_server, last)
    page.keyboard.press("]")
    expect(page.locator(NOTICE)).to_have_text("This is the last sample of batch-1.")
    page.keyboard.press("[")  # a neighbour exists: the page moves there as before
    page.wait_for_url(f"**/samples/{batch.samples.order_by('position')[1].pk}/**")


def test_delete_shift_d_and_ctrl_z_with_nothing_to_act_on_say_so(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    notice = page.locator(NOTICE)

    page.keyboard.press("Delete")
    expect(notice).to_have_text(
        "Choose a span first (click it in the list or the summary, or press Alt+↓ / Alt+↑), then press Delete to "
        "delete it."
    )
    page.keyboard.press("Shift+D")
    expect(notice).to_have_text("This sample is not marked done: D marks it done.")
    page.keyboard.press("Control+z")
    expect(notice).to_have_text("Nothing to undo: no span was deleted on this sample since it was opened.")

    # Where they can act they do as before: Backspace deletes the chosen span, Ctrl+Z brings it back, D marks the
    # sample done and Shift+D (back on it) marks it not done.
    select_words(page, "summary", sample.summary, "nine weeks")
    page.keyboard.press("1")
    assert eventually(lambda: saved_spans(sample, alice))
    page.keyboard.press("Backspace")
    assert eventually(lambda: not saved_spans(sample, alice))
    page.keyboard.press("Control+z")
    assert eventually(lambda: saved_spans(sample, alice))
    wait_until_settled(page)
    page.keyboard.press("d")
    page.wait_for_url("**/samples/*/?round=1")
    open_sample(page, live_server, sample)
    page.keyboard.press("Shift+D")
    expect(notice).to_have_text("Marked not done.")
    assert eventually(lambda: not SampleReview.objects.get(sample=sample, annotator=alice, round=1).done)
