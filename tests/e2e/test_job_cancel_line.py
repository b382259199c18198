"""An export that no worker picks up, in a real browser: its line says no worker may be running, and its Cancel (an
htmx form inside the polling line) ends it and brings the project page back with the outcome."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import Page, expect

from annotate.models import Job, Project

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_stuck_export_says_no_worker_and_its_cancel_ends_it(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project
) -> None:
    # Never sent to a broker (no worker runs here): a row as start_export writes it, queued three minutes ago.
    job = Job.objects.create(project=project, kind=Job.Kind.EXPORT, created_by=admin_user,
                             options={"format": "jsonl", "round": 1, "pseudonyms": False})
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(minutes=3))
    log_in(page, admin_user)
    url = live_server.url + reverse("project", args=[project.slug])
    page.goto(url)
    line = page.locator(f"#job-{job.pk}")
    expect(line.locator("[data-role='no-worker']")).to_contain_text("no worker may be running, or its pool may be stuck")
    expect(line.locator("[data-role='no-worker']")).to_contain_text("Or cancel the job.")
    with page.expect_response(lambda response: response.url.endswith(f"/jobs/{job.pk}/")):
        pass  # the line's own poll answers with the notice and the cancel again
    page.wait_for_timeout(200)
    expect(line.locator("[data-role='no-worker']")).to_be_visible()

    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():  # a reload: the message and the ended line come with the page
        line.locator("[data-role='cancel-job']").click()
    expect(page.locator(".messages")).to_contain_text(f"Job {job.pk} (export) is cancelled: it writes no file")
    expect(page.locator(f"#job-{job.pk}")).to_contain_text("Cancelled by adam at")
    expect(page.locator(f"#job-{job.pk} [data-role='no-worker']")).to_have_count(0)
    expect(page.locator(f"#job-{job.pk} [data-role='cancel-job']")).to_have_count(0)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.cancelled_by == "adam"
