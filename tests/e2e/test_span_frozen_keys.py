"""Every key of the span page that would change something, on a page that takes no change (a submitted round, round 1
once round 2 is open, a round frozen while the page was open), says why nothing happens, in the words a label key
uses, and changes nothing: E, L, Delete, Backspace, Shift+D, Ctrl+Z, D on a sample not done, and the label keys
with and without Shift. None of them was silent or told the annotator to choose a span first."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, Request, expect

from annotate.models import Sample, SampleReview, SpanAnnotation
from annotate.services import rounds, spans
from tests.e2e.annotation_helpers import make_span, open_sample, saved_spans, select_words, wait_until_settled

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

NOTICE = '[data-role="notice"]'
READ_ONLY = "Nothing was saved: this round is read-only. "
SUBMITTED = "You submitted round 1 of batch-1"
ROUND_TWO_OPEN = "Round 2 of batch-1 is open, so round 1 is frozen for everyone"
# The keys that write, as Playwright names them: the note, the link, both delete keys, mark not done, undo, a label
# key, and Shift with a label key (matched by its physical key, as the page does).
WRITE_KEYS = ["e", "E", "l", "Delete", "Backspace", "Shift+D", "Control+z", "2", "Shift+Digit2"]


def record_writes(page: Page) -> list[str]:
    """Every request the page sends that could change something (the similarity requests, which only read, aside)."""
    writes: list[str] = []

    def note(request: Request) -> None:
        if request.method in ("POST", "PATCH", "PUT", "DELETE") and "/similarity/" not in request.url:
            writes.append(f"{request.method} {request.url}")

    page.on("request", note)
    return writes


def press_and_read_notice(page: Page, key: str) -> str:
    """Press ``key`` with the notice hidden first, and return what the notice then says ("" when it stays hidden)."""
    page.evaluate("document.querySelector('[data-role=\"notice\"]').hidden = true")
    page.keyboard.press(key)
    notice = page.locator(NOTICE)
    try:
        expect(notice).to_be_visible(timeout=2_000)
    except AssertionError:
        return ""
    return notice.inner_text()


def state_of(sample: Sample, user: Any) -> list[tuple[Any, ...]]:
    return [(span.pk, span.labels, span.note, span.source_start, span.version) for span in saved_spans(sample, user)]


def freeze_round_one(how: str, batch: Any, alice: Any, bob: Any) -> str:
    """Alice's round 1 of the batch made read-only, submitted or under an open round 2; returns the reason's start."""
    people = (alice,) if how == "submitted" else (alice, bob)
    for person in people:
        for each in batch.samples.all():
            spans.mark_sample_done(each, person, round=1, done=True)  # the last submits the round
    if how == "round-2-open":
        rounds.open_reconciliation_round(batch, reveal_names=False)
        return ROUND_TWO_OPEN
    return SUBMITTED


@pytest.mark.parametrize("how", ["submitted", "round-2-open"])
def test_each_write_key_on_a_frozen_page_says_why_and_changes_nothing(
    page: Page, live_server: Any, log_in: Any, alice: Any, bob: Any, batch: Any, sample: Sample, how: str
) -> None:
    make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"], note="alice's note")
    reason = freeze_round_one(how, batch, alice, bob)
    before = state_of(sample, alice)
    log_in(page, alice)
    open_sample(page, live_server, sample, round=1)
    expect(page.locator('[data-role="frozen-notice"]')).to_contain_text(reason)
    writes = record_writes(page)

    # The span chosen, as an annotator would before E, L or Delete: the page may still show and choose it.
    page.keyboard.press("Alt+ArrowDown")
    expect(page.locator('[data-role="span-list"] li.active')).to_have_count(1)
    for key in WRITE_KEYS:
        said = press_and_read_notice(page, key)
        assert said.startswith(READ_ONLY + reason), f"{key}: {said!r}"
    expect(page.locator('[data-role="span-list"] li.active')).to_have_count(1)  # still there, still chosen
    # A selection in the summary, then a label key: the same words (the key the last stop mended, kept so).
    select_words(page, "summary", sample.summary, "national government")
    assert press_and_read_notice(page, "3").startswith(READ_ONLY + reason)

    page.wait_for_timeout(300)  # a write the page wrongly started would be on its way by now
    assert writes == []
    assert state_of(sample, alice) == before
    assert SampleReview.objects.get(sample=sample, annotator=alice, round=1).done


def test_keys_on_a_page_frozen_while_it_was_open_say_why_and_d_marks_nothing_done(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    first, second, third = batch.samples.order_by("position")
    log_in(page, alice)
    open_sample(page, live_server, first)
    wait_until_settled(page)
    # Alice submits the round in another tab meanwhile: the first sample is done there, not on this page.
    for each in (first, second, third):
        spans.mark_sample_done(each, alice, round=1, done=True)

    select_words(page, "summary", first.summary, "nine weeks")
    page.keyboard.press("1")  # refused by the server: the page freezes
    expect(page.locator('[data-role="frozen-notice"]')).to_contain_text(SUBMITTED)
    writes = record_writes(page)
    for key in ("d", "D", "Shift+D", "e", "Delete", "Control+z"):
        said = press_and_read_notice(page, key)
        assert said.startswith(READ_ONLY + SUBMITTED), f"{key}: {said!r}"
    page.wait_for_timeout(300)
    assert writes == []
    assert not SpanAnnotation.objects.filter(sample=first).exists()
    assert page.url.endswith(f"/samples/{first.pk}/")  # D did not move on either: the sample was not done here


def test_choosing_a_span_on_a_read_only_page_without_spans_does_not_ask_for_a_label_key(
    page: Page, live_server: Any, log_in: Any, alice: Any, bob: Any, batch: Any, sample: Sample
) -> None:
    freeze_round_one("submitted", batch, alice, bob)
    log_in(page, alice)
    open_sample(page, live_server, sample)

    said = press_and_read_notice(page, "Alt+ArrowDown")
    assert said == "No spans in this round.", said
