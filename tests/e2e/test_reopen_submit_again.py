"""A re-opened round in the browser: the admin re-opens it, the annotator relabels a span and presses D, the round
stays open (D only moves on), and Submit again is what freezes it once more."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Browser, Page, expect

from annotate.models import Assignment, Batch, RoundReopening, SpanAnnotation
from annotate.services import spans
from tests.e2e.annotation_helpers import eventually, make_span, open_sample, wait_until_settled

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

REASON = "alice asked to fix the label on sample 1"
NOTICE = '[data-role="notice"]'
REOPENED_NOTICE = '[data-role="reopened-notice"]'
FROZEN_NOTICE = '[data-role="frozen-notice"]'


def round_state(batch: Batch, person: Any) -> tuple[str, bool]:
    assignment = Assignment.objects.get(batch=batch, annotator=person, round=1)
    return assignment.status, assignment.reopened


def reopen_on_the_project_page(browser: Browser, live_server: Any, log_in: Any, admin_user: Any) -> None:
    """The admin's own browser window: Re-open… beside alice's progress, with a reason."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(15_000)
    admin_page = context.new_page()
    try:
        log_in(admin_page, admin_user)
        admin_page.goto(live_server.url + reverse("project", args=["demo"]))
        admin_page.click('[data-role="reopen"]')
        admin_page.fill('input[name="reason"]', REASON)
        admin_page.get_by_role("button", name="Re-open round 1 for alice").click()
        expect(admin_page.locator('[data-role="reopenings"]')).to_contain_text(REASON)
    finally:
        context.close()


def test_d_moves_on_in_a_reopened_round_and_only_submit_again_freezes_it(
    page: Page, browser: Browser, live_server: Any, log_in: Any, alice: Any, admin_user: Any, batch: Batch
) -> None:
    first, second, third = batch.samples.order_by("position")
    span = make_span(first, alice, "nine weeks", ["Unwanted.Intrinsic"])
    for each in (first, second, third):
        spans.mark_sample_done(each, alice, round=1, done=True)
    assert round_state(batch, alice) == (Assignment.Status.SUBMITTED, False)
    reopen_on_the_project_page(browser, live_server, log_in, admin_user)
    assert round_state(batch, alice) == (Assignment.Status.ASSIGNED, True)

    log_in(page, alice)
    open_sample(page, live_server, first)
    expect(page.locator(REOPENED_NOTICE)).to_contain_text(
        f"Round 1 re-opened by adam: {REASON}. Your changes save as you go; press Submit again when you are done."
    )
    expect(page.locator(FROZEN_NOTICE)).to_have_count(0)

    # Relabel the span (it saves as she goes), then D on this done sample: it moves on, and submits nothing.
    page.locator(f'[data-span-id="{span.pk}"]').click()
    page.keyboard.press("3")
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).labels == ["Questionable"])
    wait_until_settled(page)
    page.keyboard.press("D")
    page.wait_for_url(f"**{reverse('sample', args=['demo', second.pk])}?round=1")
    expect(page.locator("#annotator.ready")).to_be_visible()
    assert round_state(batch, alice) == (Assignment.Status.ASSIGNED, True)
    expect(page.locator(REOPENED_NOTICE)).to_be_visible()
    expect(page.locator(FROZEN_NOTICE)).to_have_count(0)
    expect(page.locator('[data-label="Benign"]')).to_be_enabled()

    # A sample un-marked during the re-opening: Submit again is refused, naming it, and the round stays open.
    page.keyboard.press("Shift+D")
    expect(page.locator('[data-role="done-badge"]')).to_be_hidden()
    page.click('[data-role="submit-again"]')
    expect(page.locator(NOTICE)).to_contain_text("sample 2 of batch-1 (round 1) is not marked done")
    assert round_state(batch, alice) == (Assignment.Status.ASSIGNED, True)

    wait_until_settled(page)
    page.keyboard.press("D")  # the last sample not done: marked done, and the page says to submit again
    expect(page.locator(NOTICE)).to_contain_text("Press Submit again")
    assert round_state(batch, alice) == (Assignment.Status.ASSIGNED, True)

    page.click('[data-role="submit-again"]')
    expect(page.locator(FROZEN_NOTICE)).to_contain_text("You submitted round 1 of batch-1 again, so it is frozen")
    expect(page.locator(NOTICE)).to_contain_text("Round 1 of batch-1 submitted again")
    expect(page.locator(REOPENED_NOTICE)).to_be_hidden()
    expect(page.locator('[data-label="Benign"]')).to_be_disabled()
    assert round_state(batch, alice) == (Assignment.Status.SUBMITTED, False)
    assert RoundReopening.objects.get().closed_at is not None

    # The next sample opens frozen, as any submitted round does.
    open_sample(page, live_server, third)
    expect(page.locator(FROZEN_NOTICE)).to_contain_text("You submitted round 1 of batch-1")
    expect(page.locator(REOPENED_NOTICE)).to_have_count(0)
