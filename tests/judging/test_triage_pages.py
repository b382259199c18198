"""The judges page's side of triage: Start triage refuses an explainer that could not run before anything runs,
and the runs list polls as a whole while a run is active, so a triage's explainer run appears without a reload."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Batch, Project
from judging.models import Judge, JudgeRun
from judging.services import runs, triage
from judging.services.judges import create_judge, update_judging_settings
from tests.annotate.results_scene import HTMX, tags
from tests.conftest import login
from tests.judging.llm_server import LoopbackLLM, Reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(admin_user: Any) -> Client:
    return login(admin_user)


def judges_url(project: Project) -> str:
    return reverse("judging-judges", args=[project.slug])


def flag_everything(body: dict, attempt: int) -> Reply:
    return Reply(content='{"score": 2}')


def set_triage(project: Project, fast: LoopbackLLM, strong: LoopbackLLM, **explainer: Any) -> None:
    first = create_judge(project, name="fast", kind="rubric", base_url=fast.base_url, model="test-model",
                         with_reasoning=False, max_retries=0)
    update_judging_settings(project, first_pass=first, explainer=create_judge(
        project, name="strong", kind="rubric", base_url=strong.base_url, model="test-model", **explainer))


def test_start_triage_names_the_explainer_s_unset_key_variable_and_starts_nothing(
    project: Project, admin: Client, batch: Batch, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FAITHLAB_TEST_NO_KEY", raising=False)
    with LoopbackLLM(flag_everything) as fast, LoopbackLLM() as strong:
        set_triage(project, fast, strong, api_key_env="FAITHLAB_TEST_NO_KEY")
        response = admin.post(reverse("judging-triage-start", args=[project.slug]), {"batch": str(batch.pk)})
    assert response.status_code == 400
    tags(response).one("p", data_role="form-error")
    html = response.content.decode()
    assert "explainer &#x27;strong&#x27; could not run" in html and "FAITHLAB_TEST_NO_KEY" in html
    assert not JudgeRun.objects.exists() and fast.chat_calls == 0


def test_the_runs_list_polls_while_a_run_is_active_and_answers_htmx_with_itself_only(
    project: Project, admin: Client
) -> None:
    judge = Judge.objects.create(project=project, name="local-llm", kind=Judge.Kind.RUBRIC,
                                 base_url="http://127.0.0.1:9/v1", model="test-model")
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.RUNNING, total=10, done=4)
    url = judges_url(project)
    listed = tags(admin.get(url)).one("section", id="runs")
    assert (listed["hx-get"], listed["hx-trigger"], listed["hx-target"], listed["hx-swap"]) == (
        url, "every 1s", "this", "outerHTML")

    response = admin.get(url, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html and 'data-role="start-triage"' not in html
    page = tags(response)
    assert page.one("section", id="runs")["hx-get"] == url
    row = page.one("div", data_run=str(run.pk))
    assert "hx-get" not in row  # the list polls; its rows do not poll on their own too

    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.DONE, done=10)
    assert "hx-get" not in tags(admin.get(url, **HTMX)).one("section", id="runs")
    assert "hx-get" not in tags(admin.get(url)).one("section", id="runs")


def test_the_list_s_poll_shows_the_explainer_run_a_finished_first_pass_started(
    project: Project, admin: Client, batch: Batch, django_capture_on_commit_callbacks: Any
) -> None:
    with LoopbackLLM(flag_everything) as fast, LoopbackLLM() as strong:
        set_triage(project, fast, strong)
        first = triage.start_triage(project, batch=batch, queue=False)
        page = tags(admin.get(judges_url(project), **HTMX))
        assert page.one("div", data_run=str(first.pk))["data-run-status"] == "queued"
        with django_capture_on_commit_callbacks(execute=False):
            runs.execute_run(first.pk)  # what the worker does: done, flags, starts the explainer
    explain = JudgeRun.objects.get(purpose=JudgeRun.Purpose.EXPLAIN)
    page = tags(admin.get(judges_url(project), **HTMX))
    assert page.one("div", data_run=str(first.pk))["data-run-status"] == "done"
    assert page.one("div", data_run=str(explain.pk))["data-run-status"] == "queued"
    assert page.one("section", id="runs")["hx-get"] == judges_url(project)  # the explainer keeps it polling


def test_the_runs_list_poll_is_for_admins_only(project: Project, alice: Any, charlie: Any) -> None:
    url = judges_url(project)
    assert login(alice).get(url, **HTMX).status_code == 403
    assert login(charlie).get(url, **HTMX).status_code == 404
