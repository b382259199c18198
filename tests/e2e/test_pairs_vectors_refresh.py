"""The round wizard in a real browser follows a span-vector job to its end without a reload.

Before: the job's element showed "Done" in place while the page kept saying items had no span vector and the
funnel showed no scored pool, until the admin reloaded. The test plays the worker's part itself (it writes the
vectors and marks the job done), so no Celery worker and no encoder are needed.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import Page, expect

from annotate.models import Job, PairItem, PairRound, Project
from tests.pairs import conftest as pairs_fixtures
from tests.pairs.factories_rounds import add_items, add_training

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

pairs_project = pairs_fixtures.pairs_project


@pytest.fixture
def waiting_for_vectors(pairs_project: Project) -> tuple[Project, Job, dict[int, bytes]]:
    """Round 1 judged (40 consensus items with vectors) and a pool of 30 of which 5 lost their vector; a vector
    job running. The band [0.1, 0.9] keeps 20 pool items once every vector is there (factories_rounds.py)."""
    first = PairRound.objects.create(project=pairs_project, number=1, size=40, seed=1, status=PairRound.Status.CLOSED)
    add_training(pairs_project, {-2: (0, 8), -1: (2, 6), 0: (4, 4), 1: (6, 2), 2: (8, 0)}, pair_round=first)
    pool = add_items(pairs_project, [-1.0] * 10 + [1.0] * 10 + [-2.0] * 5 + [2.0] * 5)
    kept = {item.pk: bytes(item.vector) for item in pool[:5]}
    PairItem.objects.filter(pk__in=kept).update(vector=None)
    job = Job.objects.create(project=pairs_project, kind=Job.Kind.PAIR_VECTORS, total=5, status=Job.Status.RUNNING)
    return pairs_project, job, kept


def step_count(page: Page, step: str) -> Any:
    return page.locator(f"[data-role='funnel'] tr[data-step='{step}'] [data-role='count']")


def test_the_wizard_previews_the_round_once_the_vector_job_ends(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, waiting_for_vectors: tuple[Project, Job, dict]
) -> None:
    project, job, kept = waiting_for_vectors
    log_in(page, admin_user)
    page.goto(live_server.url + reverse("pairs-round-new", args=[project.slug]))
    expect(page.locator("[data-role='stale-vectors']")).to_contain_text("5 items have no span vector")
    expect(step_count(page, "pool")).to_have_text("30")  # the pool, waiting for its vectors: not 0
    expect(page.locator("[data-role='refusal']")).to_contain_text("5 of the 30 pool items")
    with page.expect_response(lambda response: "/rounds/new/?" in response.url):
        page.fill("input[name=size]", "6")  # an admin's own value, which the refresh must keep
    expect(step_count(page, "pool")).to_have_text("30")
    seed = page.input_value("input[name=seed]")
    page.evaluate("window.stillTheSamePage = true")  # gone if anything reloads the page

    # The worker's part: the vectors are written and the job is done.
    for pk, vector in kept.items():
        PairItem.objects.filter(pk=pk).update(vector=vector)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE, done=5, finished_at=timezone.now())

    expect(page.locator("[data-role='vectors-ready']")).to_be_visible()
    expect(page.locator("[data-role='stale-vectors']")).to_have_count(0)
    expect(page.locator(f"#job-{job.pk}")).to_have_attribute("data-job-status", "done")
    # The preview now trains the detector (the first training in this process loads its libraries: allow for it).
    expect(step_count(page, "band")).to_have_text("20", timeout=20_000)
    expect(step_count(page, "selected")).to_have_text("6")
    expect(page.locator("[data-role='refusal']")).to_have_count(0)
    assert page.evaluate("window.stillTheSamePage") is True
    assert page.input_value("input[name=seed]") == seed and page.input_value("input[name=size]") == "6"
