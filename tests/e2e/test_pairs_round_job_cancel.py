"""Cancelling a stuck round job in a real browser: the job's page (which polls itself) asks first, and once the
admin accepts, the job says who cancelled it and the wizard lets a new round start."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Dialog, Page, expect

from annotate.models import Job, Project
from annotate.services.pairs import rounds
from tests.pairs import conftest as pairs_fixtures

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

pairs_project = pairs_fixtures.pairs_project


def test_admin_cancels_a_queued_round_job_after_confirming(page: Page, live_server: Any, log_in: Any,
                                                           admin_user: Any, pairs_project: Project) -> None:
    pairs_fixtures.make_pair_items(pairs_project, 8, round_number=None)
    # Created as start_round_job's would be, without queuing a task: no worker runs here, so it stays queued.
    job = Job.objects.create(project=pairs_project, kind=Job.Kind.PAIR_ROUND, total=1, created_by=admin_user,
                             options={"number": 1, "size": 3, "seed": 1})
    log_in(page, admin_user)
    page.goto(live_server.url + reverse("pairs-round-job", args=[pairs_project.slug, job.pk]))
    expect(page.locator("[data-role='round-job-wait']")).to_contain_text("Queued for")

    questions: list[str] = []

    def answer(dialog: Dialog, accept: bool) -> None:
        questions.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", lambda dialog: answer(dialog, False))
    page.click("[data-role='cancel-round-job']")
    assert questions and questions[0].startswith(f"Cancel job {job.pk}? It will draw no round")
    job.refresh_from_db()
    assert job.status == Job.Status.QUEUED  # dismissed: nothing sent

    page.once("dialog", lambda dialog: answer(dialog, True))
    page.click("[data-role='cancel-round-job']")
    expect(page.locator("[data-role='refusal']")).to_contain_text(re.compile(r"No round was drawn: Cancelled by adam at"))
    expect(page.locator("[data-role='cancel-round-job']")).to_have_count(0)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED

    page.goto(live_server.url + reverse("pairs-round-new", args=[pairs_project.slug]))
    expect(page.locator("[data-role='round-job-busy']")).to_have_count(0)
    assert rounds.round_job_busy(pairs_project) is None
