"""The time spent on a sample counts every visit, once: also a visit left with ] or [, a reload or closing the tab,
not only the one that ends with D. A read-only (frozen) page sends no time.

Real short waits: each bound below holds whatever the machine's speed (a visit is counted from the page's start to
its leaving, so at least the wait and at most the time measured around it), and none holds on the old page, which
sent only the last visit's time, with D."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import SampleReview
from annotate.services import spans
from tests.e2e.annotation_helpers import eventually, open_sample, sample_url, wait_until_settled

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def seconds_on(sample: Any, user: Any) -> int | None:
    review = SampleReview.objects.filter(sample=sample, annotator=user, round=1).first()
    return review.seconds_spent if review else None


def test_every_visit_counts_not_only_the_one_ended_with_d(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    first, second, _ = batch.samples.order_by("position")
    first_url = f"**{reverse('sample', args=[batch.project.slug, first.pk])}?round=1"
    second_url = f"**{reverse('sample', args=[batch.project.slug, second.pk])}?round=1"
    log_in(page, alice)

    # Each visit lies between the moment its page was asked for and the moment the next page was there.
    asked_first = time.monotonic()
    open_sample(page, live_server, first)
    page.wait_for_timeout(3000)
    asked_second = time.monotonic()
    page.keyboard.press("]")
    page.wait_for_url(second_url)
    first_visit = time.monotonic() - asked_first

    expect(page.locator("#annotator.ready")).to_be_visible()
    page.wait_for_timeout(2000)
    asked_first_again = time.monotonic()
    page.keyboard.press("[")
    page.wait_for_url(first_url)
    second_visit = time.monotonic() - asked_second
    # Left with [: the visit's time is on the second sample, which is not marked done.
    assert eventually(lambda: seconds_on(second, alice)) is not None
    assert 2 <= seconds_on(second, alice) <= second_visit + 0.5, (seconds_on(second, alice), second_visit)
    assert not SampleReview.objects.get(sample=second, annotator=alice).done

    expect(page.locator("#annotator.ready")).to_be_visible()
    page.wait_for_timeout(1000)
    wait_until_settled(page)
    page.keyboard.press("d")  # the next unfinished sample is the second
    page.wait_for_url(second_url)
    third_visit = time.monotonic() - asked_first_again

    review = SampleReview.objects.get(sample=first, annotator=alice, round=1)
    assert review.done
    # Both visits to the first sample: 3 s and 1 s at least (the old page counted only the last, about 1 s).
    assert eventually(lambda: seconds_on(first, alice) >= 4), seconds_on(first, alice)
    most = first_visit + third_visit + 1  # each visit rounded to the second
    assert seconds_on(first, alice) <= most, (seconds_on(first, alice), first_visit, third_visit)
    # Nothing more arrives later: each visit was counted once.
    page.wait_for_timeout(500)
    assert seconds_on(first, alice) <= most, (seconds_on(first, alice), first_visit, third_visit)
    assert 2 <= seconds_on(second, alice) <= second_visit + 0.5, (seconds_on(second, alice), second_visit)


def test_a_reload_and_closing_the_tab_count_the_visit(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    first = batch.samples.order_by("position").first()
    log_in(page, alice)
    open_sample(page, live_server, first)
    page.wait_for_timeout(2000)
    page.reload()
    expect(page.locator("#annotator.ready")).to_be_visible()
    assert eventually(lambda: (seconds_on(first, alice) or 0) >= 2), seconds_on(first, alice)
    after_reload = seconds_on(first, alice)

    page.wait_for_timeout(2000)
    page.close(run_before_unload=True)
    assert eventually(lambda: seconds_on(first, alice) >= after_reload + 2), seconds_on(first, alice)
    assert not SampleReview.objects.get(sample=first, annotator=alice).done


# The tab hidden and shown again, as the browser tells the page (a headless browser never hides its pages itself).
SET_HIDDEN = """(hidden) => {
  Object.defineProperty(document, "hidden", {configurable: true, get: () => hidden});
  Object.defineProperty(document, "visibilityState", {configurable: true, get: () => hidden ? "hidden" : "visible"});
  document.dispatchEvent(new Event("visibilitychange"));
}"""


def test_a_hidden_tab_sends_the_time_so_far_and_its_hidden_time_does_not_count(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    first, second, _ = batch.samples.order_by("position")
    log_in(page, alice)
    asked = time.monotonic()
    open_sample(page, live_server, first)
    page.wait_for_timeout(2000)
    page.evaluate(SET_HIDDEN, True)
    shown_for = time.monotonic() - asked
    # Sent as the tab hides: a phone may discard a hidden tab without a pagehide.
    assert eventually(lambda: seconds_on(first, alice)), "nothing sent as the tab was hidden"
    assert 2 <= seconds_on(first, alice) <= shown_for + 0.5, (seconds_on(first, alice), shown_for)
    hidden_sent = seconds_on(first, alice)

    page.wait_for_timeout(3000)  # hidden: not counted
    page.evaluate(SET_HIDDEN, False)
    shown_again = time.monotonic()
    page.wait_for_timeout(1000)
    page.keyboard.press("]")
    page.wait_for_url(sample_url(live_server, second, 1))
    shown_for = time.monotonic() - shown_again
    assert eventually(lambda: seconds_on(first, alice) > hidden_sent), seconds_on(first, alice)
    assert seconds_on(first, alice) - hidden_sent <= shown_for + 0.5, (seconds_on(first, alice), hidden_sent, shown_for)


def test_a_frozen_page_sends_no_time(page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any) -> None:
    first, second, _ = batch.samples.order_by("position")
    for each in batch.samples.all():
        spans.mark_sample_done(each, alice, round=1, done=True, seconds=7)  # the last submits the round: frozen
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.url) if "/time/" in request.url else None)
    log_in(page, alice)
    open_sample(page, live_server, first)
    expect(page.locator('[data-role="frozen-notice"]')).to_be_visible()
    page.wait_for_timeout(1500)
    page.keyboard.press("]")
    page.wait_for_url(sample_url(live_server, second, 1))
    expect(page.locator("#annotator.ready")).to_be_visible()
    page.wait_for_timeout(300)
    assert sent == []
    assert seconds_on(first, alice) == 7
