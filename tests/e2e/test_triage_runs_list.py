"""Triage from the judges page in a real browser: after Start triage, the first pass's row goes to Done and the
explainer's run it started appears in the list and runs to Done, all without a reload."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from judging.models import JudgeRun
from judging.services.judges import create_judge, update_judging_settings
from judging.services.runs import execute_run
from tests.judging.llm_server import LoopbackLLM, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def no_leftover_tasks() -> Iterator[None]:
    """Starting a run queues its task on the broker; no worker runs here, so take it off afterwards."""
    yield
    from config.celery import app

    app.control.purge()


def flag_everything(body: dict, attempt: int) -> Reply:
    return Reply(content='{"score": 2}')


def test_the_explainer_run_appears_and_finishes_in_the_list_without_a_reload(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project, batch: Batch,
    no_leftover_tasks: None,
) -> None:
    with LoopbackLLM(flag_everything) as fast, LoopbackLLM() as strong:
        first_judge = create_judge(project, name="fast", kind="rubric", base_url=fast.base_url, model="test-model",
                                   with_reasoning=False, max_retries=0)
        explainer = create_judge(project, name="strong", kind="rubric", base_url=strong.base_url, model="test-model")
        update_judging_settings(project, first_pass=first_judge, explainer=explainer)
        log_in(page, admin_user)
        page.goto(live_server.url + reverse("judging-judges", args=[project.slug]))
        page.once("dialog", lambda dialog: dialog.accept())  # Start triage asks first (test_start_confirmations.py)
        page.locator("form[data-role='start-triage'] button").click()
        expect(page.locator(".messages")).to_contain_text("Triage started")
        first = JudgeRun.objects.get(purpose=JudgeRun.Purpose.FIRST_PASS)
        expect(page.locator(f"#run-{first.pk}")).to_have_attribute("data-run-status", "queued")
        page.evaluate("window.stillTheSamePage = true")  # gone if anything reloads the page

        execute_run(first.pk)  # what the worker does: the first pass, its flags, and the explainer's run queued

        expect(page.locator(f"#run-{first.pk}")).to_have_attribute("data-run-status", "done")
        explain = JudgeRun.objects.get(purpose=JudgeRun.Purpose.EXPLAIN)
        row = page.locator(f"#run-{explain.pk}")
        expect(row).to_have_attribute("data-run-status", "queued")
        expect(row).to_contain_text("strong")

        execute_run(explain.pk)

        expect(row).to_have_attribute("data-run-status", "done")
        expect(row.locator("[data-role='run-done']")).to_have_text("3 / 3")
    assert strong.chat_calls == 3
    expect(page.locator("[data-role='run-progress']")).to_have_count(2)
    assert page.evaluate("window.stillTheSamePage") is True
    assert page.locator("#runs").get_attribute("hx-get") is None  # every run done: the list stops polling
