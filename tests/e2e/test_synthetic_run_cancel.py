"""A judge run over a synthetic set that no worker picks up, in a real browser, from the set's page: its line is the
project's run line, with the run page's Cancel, which ends it and brings the set's page back (not the run's), where
the line then reads "Cancelled by <user> at <time>"."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Project
from judging.models import Judge, JudgeRun, SyntheticSet

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_queued_run_over_a_set_is_cancelled_from_the_set_s_page_which_comes_back(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project
) -> None:
    judge = Judge.objects.create(project=project, name="stuck-judge", kind=Judge.Kind.RUBRIC,
                                 base_url="http://127.0.0.1:9/v1", model="test-model")
    synthetic = SyntheticSet.objects.create(project=project, name="rewrites", status=SyntheticSet.Status.DONE)
    # Never sent to a broker (no worker runs here).
    run = JudgeRun.objects.create(project=project, judge=judge, scope=JudgeRun.Scope.SYNTHETIC,
                                  synthetic_set=synthetic, total=3, created_by=admin_user)
    log_in(page, admin_user)
    url = live_server.url + reverse("judging-synthetic-set", args=[project.slug, synthetic.pk])
    page.goto(url)
    line = page.locator(f"[data-role='set-runs'] #run-{run.pk}")
    expect(line.locator("[data-role='run-status']")).to_have_text("Queued")

    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():  # a reload of the page the form is on: the message comes with it
        line.locator("[data-role='cancel-run']").click()
    assert page.url == url
    expect(page.locator(".messages")).to_contain_text(f"Run {run.pk} is cancelled: it judges nothing more")
    expect(line.locator("[data-role='run-status']")).to_have_text("Cancelled")
    expect(line.locator("[data-role='run-cancelled']")).to_contain_text("Cancelled by adam at")
    expect(page.locator("[data-role='cancel-run']")).to_have_count(0)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.FAILED and run.cancelled_by == admin_user
