"""The project page in a real browser: an import's embedding progress updates in place until it is done."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate import embedder
from annotate.models import Job, Project
from annotate.services import embedding

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
EXAMPLE = (Path(__file__).resolve().parents[1] / "annotate" / "faithbench_example.json").read_bytes()


@pytest.fixture
def no_leftover_tasks() -> Iterator[None]:
    """The import queues its embedding task on the broker; no worker runs here, so take it off afterwards."""
    yield
    from config.celery import app

    app.control.purge()


def test_embedding_progress_updates_in_place_and_the_batches_stay(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project, no_leftover_tasks: None
) -> None:
    embedder.get_model()  # loaded before the page polls, so the job below takes a moment
    log_in(page, admin_user)
    url = live_server.url + reverse("project", args=[project.slug])
    page.goto(url)
    page.set_input_files("input[name=files]", files=[
        {"name": "batch_1.json", "mimeType": "application/json", "buffer": EXAMPLE},
    ])
    page.click("form[action$='/import/'] button")
    page.wait_for_url(url)
    expect(page.locator(".messages")).to_contain_text("Imported 1 batch, 2 samples and 4 spans")
    job = Job.objects.get(project=project, kind=Job.Kind.EMBED)
    assert job.status == Job.Status.QUEUED  # no worker here: the test runs the job itself, below

    batches = page.locator("#progress")
    progress = page.locator(f"#job-{job.pk}")
    expect(progress).to_have_attribute("data-job-status", "queued")
    page.evaluate("window.stillTheSamePage = true")  # gone if anything reloads the page

    # The element polls its own URL every 2 s; before the fix its answer replaced the whole section with nothing.
    for _ in range(2):
        with page.expect_response(lambda response: response.url.endswith(f"/jobs/{job.pk}/")):
            pass
        page.wait_for_timeout(200)  # let htmx swap the answer in
        expect(batches.locator("h2")).to_have_text("Batches")
        expect(batches.locator("tr[data-batch]")).to_have_count(1)
        expect(progress).to_have_attribute("data-job-status", "queued")
        expect(page.locator("[data-role='job-progress']")).to_have_count(1)

    embedding.run_embedding_job(job.pk)

    expect(progress).to_have_attribute("data-job-status", "done")
    expect(progress.locator("progress")).to_have_attribute("value", "100")
    expect(progress).to_contain_text("3 of 3 texts (passages and summaries)")
    expect(batches).to_be_visible()
    expect(batches.locator("tr[data-batch]")).to_contain_text("batch_1")
    expect(batches).to_contain_text("Sentences embedded for highlighting: 2 of 2 summaries")
    # Done: the element and the section stop polling.
    assert progress.get_attribute("hx-get") is None
    expect(batches).not_to_have_attribute("hx-trigger", "every 3s")
    assert page.evaluate("window.stillTheSamePage") is True


def test_page_2_of_the_batches_polls_in_place_and_keeps_its_rows(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, alice: Any, project: Project,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from annotate.services import pages
    from tests.annotate.test_project_page_queries import add_batches

    monkeypatch.setattr(pages, "BATCHES_PER_PAGE", 2, raising=False)  # the live server runs in this process
    made = add_batches(project, 3, [alice], submitted=False)
    Job.objects.create(project=project, kind=Job.Kind.EMBED)  # queued: the Batches section polls
    log_in(page, admin_user)
    page.goto(live_server.url + reverse("project", args=[project.slug]) + "?page=2")
    batches = page.locator("#progress")
    expect(batches.locator("tr[data-batch]")).to_have_count(1)
    page.evaluate("window.stillTheSamePage = true")
    with page.expect_response(lambda response: response.url.endswith("/projects/demo/?page=2")
                              and response.request.headers.get("hx-request") == "true", timeout=10_000):
        pass
    page.wait_for_timeout(200)  # let htmx swap the answer in
    expect(batches.locator("tr[data-batch]")).to_have_count(1)
    expect(batches.locator(f'tr[data-batch="{made[2].pk}"]')).to_be_visible()
    expect(batches.locator("[data-role='batch-count']")).to_have_text("3 batches; showing 3–3.")
    assert page.evaluate("window.stillTheSamePage") is True
    batches.locator("[data-role='pages'] a[rel='prev']").click()
    expect(batches.locator("tr[data-batch]")).to_have_count(2)
    expect(batches.locator("[data-role='batch-count']")).to_have_text("3 batches; showing 1–2.")
