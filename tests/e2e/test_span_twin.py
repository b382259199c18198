"""The annotation page when the server already holds the span it saves (same offsets and labels): the page keeps
one span, gives the stored one what the annotator typed on the copy, and never shows a failed copy."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, Route, expect

from annotate.models import Sample, SpanAnnotation
from annotate.services import rounds, spans
from tests.e2e.annotation_helpers import eventually, make_span, open_sample, saved_spans, select_words

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

NOT_SAVED = '[data-role="span-list"] .span-state.failed'


def test_saving_a_span_again_from_a_selection_selects_the_stored_one_and_keeps_its_note(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    """The page shows the span with its note; the annotator selects the same words and presses the same label."""
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"], note="eight weeks in the source")
    log_in(page, alice)
    open_sample(page, live_server, sample)

    select_words(page, "summary", sample.summary, "nine weeks")
    page.keyboard.press("1")  # Unwanted.Intrinsic: the server answers 409, naming the stored span

    notice = page.locator('[data-role="notice"]')
    expect(notice).to_have_text(
        "“nine weeks” as Unwanted.Intrinsic is already saved — selected it instead of saving a copy."
    )
    expect(page.locator('[data-role="span-list"] li')).to_have_count(1)
    expect(page.locator(f'[data-span-id="{span.pk}"]')).to_have_class("span-item cat-U active")
    expect(page.locator(NOT_SAVED)).to_have_count(0)
    expect(page.locator('[data-role="note"]')).to_have_value("eight weeks in the source")
    expect(page.locator('[data-role="save-status"]')).to_have_text("Saved")
    span.refresh_from_db()
    assert (span.note, span.version) == ("eight weeks in the source", 1)
    assert len(saved_spans(sample, alice)) == 1


def test_a_true_repeat_is_not_listed_twice(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    """The same span with the same (empty) note: the server answers 200 with the stored one."""
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)

    select_words(page, "summary", sample.summary, "nine weeks")
    page.keyboard.press("1")

    expect(page.locator('[data-role="notice"]')).to_contain_text("is already saved — selected it")
    expect(page.locator('[data-role="span-list"] li')).to_have_count(1)
    expect(page.locator(f'[data-span-id="{span.pk}"]')).to_have_count(1)
    assert len(saved_spans(sample, alice)) == 1


def test_a_retried_save_whose_first_try_reached_the_server_gets_the_note_typed_meanwhile(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    """Offline: the first POST is stored but its answer is lost, and every automatic retry fails; the annotator
    types a note on the unsaved span and presses Retry, which repeats the span with that note (409). The page's
    clock is moved on past the ~45 s of automatic tries."""
    page.clock.install()
    log_in(page, alice)
    open_sample(page, live_server, sample)
    posts: list[str] = []

    def answer_lost(route: Route) -> None:
        if route.request.method != "POST":
            route.continue_()
            return
        posts.append(route.request.post_data or "")
        if len(posts) == 1:
            route.fetch()  # the server stores the span; the page never hears back
        route.abort()

    page.route("**/api/spans/", answer_lost)
    select_words(page, "summary", sample.summary, "nine weeks")
    page.keyboard.press("1")
    for _ in range(30):
        if page.locator(NOT_SAVED).count():
            break
        page.clock.fast_forward(5000)
        page.wait_for_timeout(100)
    expect(page.locator(NOT_SAVED)).to_contain_text("Not saved: network error")
    (stored,) = saved_spans(sample, alice)
    assert stored.note == ""

    page.locator('[data-role="note"]').fill("eight weeks in the source")
    page.unroute("**/api/spans/")
    page.click('[data-role="span-list"] [data-role="retry"]')

    expect(page.locator('[data-role="notice"]')).to_have_text(
        "“nine weeks” as Unwanted.Intrinsic is already saved — showing it instead of saving a copy, with the new note."
    )
    expect(page.locator(f'[data-span-id="{stored.pk}"]')).to_contain_text("eight weeks in the source")
    expect(page.locator('[data-role="span-list"] li')).to_have_count(1)
    expect(page.locator(NOT_SAVED)).to_have_count(0)
    expect(page.locator('[data-role="save-status"]')).to_have_text("Saved")
    assert eventually(lambda: SpanAnnotation.objects.get(pk=stored.pk).note == "eight weeks in the source")
    assert [span.pk for span in saved_spans(sample, alice)] == [stored.pk]
    assert len(posts) == 13  # the first try and its twelve automatic retries

    # The page edits the stored span from here on: its version followed the PATCH.
    page.locator('[data-role="note"]').fill("eight weeks, says the source")
    assert eventually(lambda: SpanAnnotation.objects.get(pk=stored.pk).note == "eight weeks, says the source")


def test_copying_anothers_span_that_i_have_with_labels_in_another_order_changes_nothing(
    page: Page, live_server: Any, log_in: Any, alice: Any, bob: Any, batch: Any, sample: Sample
) -> None:
    """Round 2: labels are a set, so bob's span is one alice has already; copying it keeps her own source link."""
    words, source = "national government", sample.passage.text
    mine = make_span(sample, alice, words, ["Questionable", "Benign"])
    theirs = make_span(sample, bob, words, ["Benign", "Questionable"])
    for span, linked in ((mine, "regional council"), (theirs, "12.4 million euros")):
        start = source.index(linked)
        SpanAnnotation.objects.filter(pk=span.pk).update(
            source_start=start, source_end=start + len(linked), source_text=linked
        )
    for person in (alice, bob):
        for each in batch.samples.all():
            spans.mark_sample_done(each, person, round=1, done=True)
    rounds.open_reconciliation_round(batch, reveal_names=False)
    (own,) = SpanAnnotation.objects.filter(sample=sample, annotator=alice, round=2)
    log_in(page, alice)
    open_sample(page, live_server, sample)

    other = page.locator('[data-role="others"] [data-role="other-span"]')
    expect(other).to_have_count(1)
    other.locator('[data-role="copy"]').click()

    expect(page.locator('[data-role="notice"]')).to_have_text("You already have this span with the same labels.")
    expect(page.locator('[data-role="span-list"] li')).to_have_count(1)
    page.wait_for_timeout(500)  # a save, were one sent, would have reached the server by now
    assert list(SpanAnnotation.objects.filter(sample=sample, annotator=alice, round=2).values_list(
        "pk", "source_text", "version")) == [(own.pk, "regional council", own.version)]
