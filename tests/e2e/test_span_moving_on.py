"""Moving between samples on the span page: a quick second D never marks the next sample done unread, and the
browser's Back shows the sample as it is now, with its spans and its done mark, not a copy from before."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Assignment, SampleReview
from tests.e2e.annotation_helpers import open_sample, select_words, wait_until_settled

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def done_positions(batch: Any, user: Any) -> list[int]:
    reviews = SampleReview.objects.filter(sample__batch=batch, annotator=user, round=1, done=True)
    return sorted(review.sample.position for review in reviews.select_related("sample"))


def test_d_pressed_again_as_the_next_sample_appears_is_ignored_and_says_so(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    first, second, _ = batch.samples.order_by("position")
    log_in(page, alice)
    open_sample(page, live_server, first)
    wait_until_settled(page)

    page.keyboard.press("d")
    page.wait_for_url(f"**{reverse('sample', args=[batch.project.slug, second.pk])}?round=1")
    expect(page.locator("#annotator.ready")).to_be_visible()
    page.keyboard.press("d")  # the second press of a quick double D, meant for the first sample

    expect(page.locator('[data-role="notice"]')).to_contain_text("Not marked done: this sample has only just appeared")
    time.sleep(0.3)
    assert done_positions(batch, alice) == [0]
    expect(page.locator('[data-role="done-badge"]')).to_be_hidden()

    # Once the sample has been shown a moment, D marks it done as before.
    wait_until_settled(page)
    page.keyboard.press("d")
    page.wait_for_url(f"**{reverse('sample', args=[batch.project.slug, batch.samples.order_by('position')[2].pk])}*")
    assert done_positions(batch, alice) == [0, 1]


def test_a_double_d_on_the_last_open_sample_but_one_does_not_submit_the_round(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    first, second, third = batch.samples.order_by("position")
    SampleReview.objects.create(sample=first, annotator=alice, round=1, done=True)
    log_in(page, alice)
    open_sample(page, live_server, second)
    wait_until_settled(page)

    page.keyboard.press("d")
    page.wait_for_timeout(400)
    page.keyboard.press("d")
    page.wait_for_url(f"**{reverse('sample', args=[batch.project.slug, third.pk])}?round=1")
    expect(page.locator("#annotator.ready")).to_be_visible()
    page.wait_for_timeout(400)

    assert done_positions(batch, alice) == [0, 1]
    assert Assignment.objects.get(batch=batch, annotator=alice, round=1).status != Assignment.Status.SUBMITTED
    expect(page.locator('[data-role="frozen-notice"]')).to_have_count(0)


def test_back_after_d_shows_the_span_and_the_done_mark(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    first, second, _ = batch.samples.order_by("position")
    log_in(page, alice)
    open_sample(page, live_server, first)
    select_words(page, "summary", first.summary, "nine weeks")
    page.keyboard.press("1")
    expect(page.locator("[data-span-id]")).to_have_count(1)
    wait_until_settled(page)

    page.keyboard.press("d")
    page.wait_for_url(f"**{reverse('sample', args=[batch.project.slug, second.pk])}?round=1")
    expect(page.locator("#annotator.ready")).to_be_visible()
    page.go_back()

    expect(page.locator("#annotator.ready")).to_be_visible()
    expect(page.locator("[data-span-id]")).to_have_count(1)
    expect(page.locator('[data-role="summary"] .seg.cat-U')).to_have_text("nine weeks")
    expect(page.locator('[data-role="done-badge"]')).to_be_visible()
    expect(page.locator('[data-role="progress-text"]')).to_have_text("1/3 done")


def test_d_after_an_admin_unassigned_the_annotator_says_so_and_freezes_the_page(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    """The review API answers 404 once the round is no longer the annotator's: the page says why in words, not
    "No such sample", and takes no more writes."""
    first = batch.samples.order_by("position")[0]
    log_in(page, alice)
    open_sample(page, live_server, first)
    wait_until_settled(page)
    Assignment.objects.filter(batch=batch, annotator=alice).delete()

    page.keyboard.press("d")
    notice = page.locator('[data-role="notice"]')
    expect(notice).to_contain_text("you no longer annotate round 1 of")
    expect(notice).to_contain_text("unassigned or removed you")
    assert reverse("sample", args=[batch.project.slug, first.pk]) in page.url  # stayed on the sample
    assert done_positions(batch, alice) == []
    page.keyboard.press("1")  # a label key on the frozen page saves nothing and says why
    expect(notice).to_contain_text("Nothing was saved")
