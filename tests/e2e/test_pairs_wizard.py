"""The round wizard in a real browser: a changed threshold updates the funnel in place, and "Create round" lands
on the new round's page with its items and why each was chosen."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Job, PairRound, Project
from annotate.services.pairs import rounds
from tests.pairs import conftest as pairs_fixtures
from tests.pairs.factories_rounds import add_items, add_training

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

pairs_project = pairs_fixtures.pairs_project


@pytest.fixture
def no_leftover_tasks() -> Iterator[None]:
    """Creating the round queues its task on the broker; no worker runs here, so take it off afterwards."""
    yield
    from config.celery import app

    app.control.purge()


@pytest.fixture
def ready_for_round_two(pairs_project: Project) -> Project:
    """Round 1 judged (40 consensus items, 20 H and 20 N, with span vectors) and a pool of 30 scored items.

    The detector learns P(H) of about 0.25 at t = -1 and 0.75 at t = 1 and about 0 and 1 at t = -2 and 2
    (tests/pairs/factories_rounds.py): a [0.1, 0.9] band keeps the 20 items at t = +-1 and drops the 10 others.
    """
    first = PairRound.objects.create(project=pairs_project, number=1, size=40, seed=1, status=PairRound.Status.CLOSED)
    add_training(pairs_project, {-2: (0, 8), -1: (2, 6), 0: (4, 4), 1: (6, 2), 2: (8, 0)}, pair_round=first)
    add_items(pairs_project, [-1.0] * 10 + [1.0] * 10 + [-2.0] * 5 + [2.0] * 5)
    return pairs_project


def step_count(page: Page, step: str) -> Any:
    return page.locator(f"[data-role='funnel'] tr[data-step='{step}'] [data-role='count']")


def test_admin_adjusts_the_band_sees_the_funnel_change_and_creates_the_round(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, ready_for_round_two: Project,
    no_leftover_tasks: None,
) -> None:
    project = ready_for_round_two
    log_in(page, admin_user)
    page.goto(live_server.url + reverse("project", args=[project.slug]))
    page.click("[data-role='next-round']")
    expect(page.locator("h1")).to_have_text("Start round 2")
    expect(step_count(page, "pool")).to_have_text("30")
    expect(step_count(page, "band")).to_have_text("20")  # the default band [0.1, 0.9]
    page.evaluate("window.stillTheSamePage = true")  # gone if anything reloads the page

    # Widen the band to everything: the preview is fetched and swapped in, the form stays.
    with page.expect_response(lambda response: "/rounds/new/?" in response.url):
        page.fill("input[name=low]", "0")
    with page.expect_response(lambda response: "/rounds/new/?" in response.url):
        page.fill("input[name=high]", "1")
    expect(step_count(page, "band")).to_have_text("30")
    expect(step_count(page, "pool")).to_have_text("30")
    expect(page.locator("[data-role='ratio'] [data-role='action']")).not_to_be_empty()
    assert page.evaluate("window.stillTheSamePage") is True

    # Back to a narrower band, and a small round.
    page.fill("input[name=low]", "0.1")
    page.fill("input[name=high]", "0.9")
    page.fill("input[name=size]", "6")
    expect(step_count(page, "band")).to_have_text("20")
    expect(step_count(page, "selected")).to_have_text("6")
    seed = int(page.input_value("input[name=seed]"))

    page.click("[data-role='create-round']")
    expect(page.locator("[data-role='round-job']")).to_be_visible()
    job = Job.objects.get(project=project, kind=Job.Kind.PAIR_ROUND)
    assert job.options["seed"] == seed and job.options["size"] == 6
    rounds.run_round_job(job.pk)  # what the worker would do; the page polls and then opens the round

    page.wait_for_url(live_server.url + reverse("pairs-round", args=[project.slug, 2]))
    expect(page.locator("h1")).to_contain_text("Round 2")
    rows = page.locator("[data-role='round-items'] tr[data-item]")
    expect(rows).to_have_count(6)
    reasons = page.locator("[data-role='round-items'] [data-role='why-chosen']").all_inner_texts()
    assert len(reasons) == 6
    for reason in reasons:
        assert re.match(r"Chosen by the detector: P\(H\) = 0\.\d{3}; predicted [HN]; passed the P\(H\) band", reason)
    drawn = PairRound.objects.get(project=project, number=2).items.count()
    assert drawn == 6
    expect(page.locator("[data-role='funnel'] tr[data-step='band'] [data-role='count']")).to_have_text("20")
