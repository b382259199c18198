"""The judges page in a real browser: a run's progress row updates in place, and only the row, until the run
is done; then it stops polling."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from judging.models import Judge, JudgeRun
from judging.services.runs import execute_run
from tests.judging.llm_server import LoopbackLLM

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def no_leftover_tasks() -> Iterator[None]:
    """Starting a run queues its task on the broker; no worker runs here, so take it off afterwards."""
    yield
    from config.celery import app

    app.control.purge()


def test_run_progress_updates_in_place_without_losing_the_page(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project
) -> None:
    judge = Judge.objects.create(project=project, name="local-llm", kind=Judge.Kind.RUBRIC,
                                 base_url="http://127.0.0.1:9/v1", model="test-model")
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.RUNNING, total=10, done=2,
                                  scored=2)
    log_in(page, admin_user)
    page.goto(live_server.url + reverse("judging-judges", args=[project.slug]))
    row = page.locator(f"#run-{run.pk}")
    expect(row.locator("[data-role='run-done']")).to_have_text("2 / 10")
    page.evaluate("window.stillTheSamePage = true")  # gone if anything reloads the page
    page.click("[data-role='new-rubric-judge']")
    page.fill("input[name='rubric-name']", "typed, not yet saved")  # a half-filled form must survive the polling

    JudgeRun.objects.filter(pk=run.pk).update(done=7, scored=6, failed=1, calls=8)
    expect(row.locator("[data-role='run-done']")).to_have_text("7 / 10")
    expect(row.locator("[data-role='run-counts']")).to_contain_text("scored 6 · failed 1 · calls 8")
    expect(row.locator("progress")).to_have_attribute("value", "70")
    # Only the row was swapped: the sections around it are all still there, once each.
    for section in ("#judges", "#triage", "#start-run", "#runs"):
        expect(page.locator(section)).to_have_count(1)
    expect(page.locator("[data-role='run-progress']")).to_have_count(1)
    expect(page.locator("input[name='rubric-name']")).to_have_value("typed, not yet saved")

    JudgeRun.objects.filter(pk=run.pk).update(done=10, scored=9, status=JudgeRun.Status.DONE)
    expect(row).to_have_attribute("data-run-status", "done")
    expect(row.locator("[data-role='run-done']")).to_have_text("10 / 10")
    assert row.get_attribute("hx-get") is None  # done: no more polling

    polls: list[str] = []
    page.on("request", lambda request: polls.append(request.url) if f"/runs/{run.pk}/" in request.url else None)
    page.wait_for_timeout(2500)
    assert polls == []
    assert page.evaluate("window.stillTheSamePage") is True


def test_a_run_started_from_the_page_shows_its_result_when_it_is_done(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project, batch: Batch,
    no_leftover_tasks: None,
) -> None:
    with LoopbackLLM() as server:
        judge = Judge.objects.create(project=project, name="loopback", kind=Judge.Kind.RUBRIC,
                                     base_url=server.base_url, model="test-model", concurrency=2)
        log_in(page, admin_user)
        page.goto(live_server.url + reverse("judging-judges", args=[project.slug]))
        form = page.locator("form[data-role='start-run']")
        form.locator("select[name='judge']").select_option(str(judge.pk))
        form.locator("select[name='scope']").select_option("all")
        page.once("dialog", lambda dialog: dialog.accept())  # Start run asks first (test_start_confirmations.py)
        form.locator("button").click()
        expect(page.locator(".messages")).to_contain_text("queued")
        run = JudgeRun.objects.get(judge=judge)
        row = page.locator(f"#run-{run.pk}")
        expect(row).to_have_attribute("data-run-status", "queued")
        page.evaluate("window.stillTheSamePage = true")

        execute_run(run.pk, follow_up=False)  # what the worker does; the page keeps polling meanwhile

        expect(row).to_have_attribute("data-run-status", "done")
        expect(row.locator("[data-role='run-done']")).to_have_text("3 / 3")
        expect(row.locator("[data-role='run-counts']")).to_contain_text("scored 3 · failed 0")
        assert server.chat_calls == 3
    assert page.evaluate("window.stillTheSamePage") is True
    page.locator(f"#run-{run.pk} a").first.click()
    expect(page.locator("[data-role='judgements'] tr[data-status='ok']")).to_have_count(3)
    expect(page.locator("[data-role='judgements']")).to_contain_text("5 · highly faithful")


def test_the_ask_again_box_shows_only_while_a_rubric_judge_is_chosen(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project
) -> None:
    rubric = Judge.objects.create(project=project, name="local-llm", kind=Judge.Kind.RUBRIC,
                                  base_url="http://127.0.0.1:9/v1", model="test-model")
    nli = Judge.objects.create(project=project, name="hhem", kind=Judge.Kind.NLI, nli_model_path="/nowhere")
    log_in(page, admin_user)
    page.goto(live_server.url + reverse("judging-judges", args=[project.slug]))
    form = page.locator("form[data-role='start-run']")
    box = form.locator("label[data-field='ask_again']")
    expect(box).to_be_hidden()  # no judge chosen yet
    form.locator("select[name='judge']").select_option(str(rubric.pk))
    expect(box).to_be_visible()
    expect(box).to_contain_text("Ask again for answers that could not be read (parse errors)")
    form.locator("select[name='judge']").select_option(str(nli.pk))
    expect(box).to_be_hidden()
