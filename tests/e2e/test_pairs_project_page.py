"""The pairs project page in a real browser: a background job's progress updates in place, and the counts
section around it stays whole (the span page once lost its section to an inherited hx-select)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import Page, expect

from annotate.models import Job, PairConfig, Project
from tests.pairs import conftest as pairs_fixtures
from tests.pairs.factories_perturbation import build_tiny_models

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

pairs_project = pairs_fixtures.pairs_project


def test_job_progress_updates_in_place_and_the_counts_stay(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, pairs_project: Project
) -> None:
    pairs_fixtures.make_pair_items(pairs_project, 3, round_number=None)
    job = Job.objects.create(project=pairs_project, kind=Job.Kind.PERTURB, total=4, status=Job.Status.RUNNING)
    log_in(page, admin_user)
    page.goto(live_server.url + reverse("project", args=[pairs_project.slug]))
    status = page.locator("#pair-status")
    progress = page.locator(f"#job-{job.pk}")
    expect(progress).to_have_attribute("data-job-status", "running")
    page.evaluate("window.stillTheSamePage = true")  # gone if anything reloads the page

    # The worker's progress, as it writes it; the element polls its own URL every 2 s, the section every 3 s.
    Job.objects.filter(pk=job.pk).update(done=2)
    expect(progress).to_contain_text("2 of 4 original texts")
    with page.expect_response(lambda response: response.url.endswith(f"/projects/{pairs_project.slug}/")):
        pass  # the section's own poll came back and was swapped in
    page.wait_for_timeout(200)
    expect(status.locator("h2")).to_have_text("Data")
    expect(status.locator("tr[data-state='pool'] td")).to_have_text("3")
    expect(page.locator("[data-role='job-progress']")).to_have_count(1)
    expect(page.locator("#import")).to_have_count(1)

    Job.objects.filter(pk=job.pk).update(done=4, status=Job.Status.DONE, finished_at=timezone.now())
    expect(progress).to_have_attribute("data-job-status", "done")
    expect(progress).to_contain_text("4 of 4 original texts")
    # Done: the section answers without polling, and the job element stops.
    expect(status).not_to_have_attribute("hx-trigger", "every 3s")
    assert progress.get_attribute("hx-get") is None
    expect(status.locator("tr[data-state='pool'] td")).to_have_text("3")
    assert page.evaluate("window.stillTheSamePage") is True


def test_cancelling_a_perturbation_job_from_its_line_reloads_the_page_with_the_message(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, pairs_project: Project, tmp_path: Path
) -> None:
    # The cancel is an htmx form on the project page itself; its answer sends the browser to the same page at
    # #perturbation, which on its own only scrolls: the message never showed and the line kept saying "running".
    masked_lm, causal_lm = build_tiny_models(tmp_path)  # the section offers Cancel once the models are set up
    PairConfig.objects.update_or_create(project=pairs_project,
                                        defaults={"masked_lm": str(masked_lm), "causal_lm": str(causal_lm)})
    job = Job.objects.create(project=pairs_project, kind=Job.Kind.PERTURB, total=400, done=73,
                             status=Job.Status.RUNNING, created_by=admin_user, options={"seed": 1})
    log_in(page, admin_user)
    page.goto(live_server.url + reverse("project", args=[pairs_project.slug]))
    page.on("dialog", lambda dialog: dialog.accept())
    page.locator("[data-role=cancel-perturbation-job]").click()
    expect(page.locator("[data-role=messages]")).to_contain_text(f"Job {job.pk} is cancelled")
    expect(page.locator(f"#job-{job.pk}")).to_contain_text("Cancelled")
    job.refresh_from_db()
    assert job.options["cancelled_by"] == admin_user.get_username()
