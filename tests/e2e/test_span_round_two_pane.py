"""Round 2's pane of the others' round-1 work: under pseudonyms the annotator's own letter says "(you)", the
disagreement badge is apart from the last label in words too, and once round 2 is submitted the pane stays, read-only."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Sample
from annotate.services import rounds, spans
from tests.e2e.annotation_helpers import make_span, open_sample

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

OTHERS = '[data-role="others"]'


def open_round_two(batch: Any, sample: Sample, alice: Any, bob: Any) -> None:
    make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    make_span(sample, bob, "national government", ["Questionable"], note="bob's reason")
    for person in (alice, bob):
        for each in batch.samples.all():
            spans.mark_sample_done(each, person, round=1, done=True)
    rounds.open_reconciliation_round(batch, reveal_names=False)


def test_the_annotator_is_told_which_pseudonym_is_theirs(
    page: Page, live_server: Any, log_in: Any, alice: Any, bob: Any, batch: Any, sample: Sample
) -> None:
    open_round_two(batch, sample, alice, bob)
    log_in(page, alice)
    open_sample(page, live_server, sample)

    line = page.locator('[data-role="others-summary"]')
    expect(line).to_contain_text("Annotator A (you): Unwanted · Annotator B: Questionable")
    # In words (what a screen reader reads), the badge is apart from the last label.
    text = line.text_content() or ""
    assert "Questionabledisagreement" not in text
    assert text.endswith("Annotator B: Questionable — disagreement"), text
    assert "(you)" not in (page.locator('[data-role="other-span"]').text_content() or "")


def test_a_submitted_round_two_still_shows_the_others_read_only(
    page: Page, live_server: Any, log_in: Any, alice: Any, bob: Any, batch: Any, sample: Sample
) -> None:
    open_round_two(batch, sample, alice, bob)
    for each in batch.samples.all():
        spans.mark_sample_done(each, alice, round=2, done=True)  # the last submits round 2: frozen
    log_in(page, alice)
    open_sample(page, live_server, sample)

    expect(page.locator('[data-role="frozen-notice"]')).to_contain_text("You submitted round 2 of batch-1")
    others = page.locator(OTHERS)
    expect(others).to_be_visible()
    expect(others).to_contain_text("Annotator A (you): Unwanted")
    other = others.locator('[data-role="other-span"]')
    expect(other).to_have_count(1)
    expect(other).to_contain_text("bob's reason")
    assert other.locator('[data-role="copy"]').count() == 0  # read-only: nothing to copy into a frozen round
    other.click()
    expect(page.locator('[data-role="summary"] .seg.preview')).to_have_text("national government")
