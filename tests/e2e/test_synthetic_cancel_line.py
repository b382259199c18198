"""A synthetic set that no worker picks up, in a real browser: its line says no worker may be running, and its Cancel
(an htmx form inside the polling line) ends it and brings the set's page back with the outcome and its Resume."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import Page, expect

from annotate.models import Project
from judging.models import Judge, SyntheticSet

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_stuck_synthetic_set_says_no_worker_and_its_cancel_ends_it(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project
) -> None:
    writer = Judge.objects.create(project=project, name="writer", kind=Judge.Kind.RUBRIC,
                                  base_url="http://127.0.0.1:9/v1", model="test-model")
    # Never sent to a broker (no worker runs here): queued three minutes ago.
    synthetic = SyntheticSet.objects.create(project=project, name="rewrites", writer=writer, total=10)
    SyntheticSet.objects.filter(pk=synthetic.pk).update(created_at=timezone.now() - timedelta(minutes=3))
    log_in(page, admin_user)
    url = live_server.url + reverse("judging-synthetic-set", args=[project.slug, synthetic.pk])
    page.goto(url)
    line = page.locator(f"#synthetic-{synthetic.pk}")
    expect(line.locator("[data-role='no-worker']")).to_contain_text("Or cancel the job.")
    with page.expect_response(lambda response: response.url == url + "?on=page"):
        pass  # the line's own poll (from the set's page) answers with the notice and the cancel again
    page.wait_for_timeout(200)
    expect(line.locator("[data-role='cancel-set']")).to_be_visible()

    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():  # a reload: the message and the ended line come with the page
        line.locator("[data-role='cancel-set']").click()
    expect(page.locator(".messages")).to_contain_text("Set 'rewrites' is cancelled: it asks the writer for nothing more")
    expect(page.locator(f"#synthetic-{synthetic.pk} [data-role='set-status']")).to_contain_text("Cancelled")
    expect(page.locator(f"#synthetic-{synthetic.pk} [data-role='set-cancelled']")).to_contain_text(
        "Cancelled by adam at")
    expect(page.locator(f"#synthetic-{synthetic.pk} [data-role='no-worker']")).to_have_count(0)
    expect(page.locator("[data-role='cancel-set']")).to_have_count(0)
    expect(page.locator("[data-role='resume']")).to_be_visible()
    synthetic.refresh_from_db()
    assert synthetic.status == SyntheticSet.Status.FAILED and synthetic.cancelled_by == admin_user
