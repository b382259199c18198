"""Retrying a request is safe: POST /api/projects/<slug>/judge-runs/ sent again while the same run is still queued
or running answers that run (200, ``existing`` true) instead of starting a second one, which would double the
work and its cost; and POST /api/projects/<slug>/judges/ with a name already used says which judge holds it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from annotate.models import Batch, Project
from judging import prompts
from judging.models import Judge, JudgeRun
from judging.services import judges as judge_services
from judging.services.judges import edit as judge_edit
from judging.services.judges import save_prompt
from tests.conftest import login

pytestmark = pytest.mark.django_db

RUNS = "/api/projects/demo/judge-runs/"
JUDGES = "/api/projects/demo/judges/"


@pytest.fixture(autouse=True)
def runs_stay_queued(settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = False  # no worker here: a started run stays queued until the test moves it


def rubric_judge(project: Project, name: str = "local") -> Judge:
    return Judge.objects.create(project=project, name=name, kind=Judge.Kind.RUBRIC, base_url="http://127.0.0.1:9/v1",
                                model="tiny")


def post_json(client: Client, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


def test_the_same_run_asked_twice_is_started_once(batch: Batch, admin_user: Any) -> None:
    judge = rubric_judge(batch.project)
    client = login(admin_user)
    first = post_json(client, RUNS, {"judge": judge.pk, "scope": "batch", "batch": batch.pk})
    again = post_json(client, RUNS, {"judge": judge.pk, "scope": "batch", "batch": batch.pk})
    assert (first.status_code, again.status_code) == (201, 200), (first.content, again.content)
    assert (first.json()["existing"], again.json()["existing"]) == (False, True)
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["status"] == "queued"
    assert JudgeRun.objects.count() == 1


def test_a_running_run_is_answered_too_and_a_finished_one_does_not_block(batch: Batch, admin_user: Any) -> None:
    judge = rubric_judge(batch.project)
    client = login(admin_user)
    first = post_json(client, RUNS, {"judge": judge.pk}).json()["id"]
    JudgeRun.objects.filter(pk=first).update(status=JudgeRun.Status.RUNNING, done=1)
    running = post_json(client, RUNS, {"judge": judge.pk})
    assert running.status_code == 200 and running.json()["id"] == first and running.json()["done"] == 1
    for finished in (JudgeRun.Status.DONE, JudgeRun.Status.FAILED):
        JudgeRun.objects.filter(judge=judge).update(status=finished)
        fresh = post_json(client, RUNS, {"judge": judge.pk})
        assert fresh.status_code == 201 and fresh.json()["existing"] is False, finished
    assert JudgeRun.objects.filter(judge=judge).count() == 3


def test_another_scope_batch_choice_judge_or_rubric_version_is_another_run(batch: Batch, admin_user: Any) -> None:
    project = batch.project
    judge, other_judge = rubric_judge(project), rubric_judge(project, "second")
    other_batch = Batch.objects.create(project=project, name="batch-2")
    client = login(admin_user)
    bodies = [
        {"judge": judge.pk},
        {"judge": judge.pk, "scope": "batch", "batch": batch.pk},
        {"judge": judge.pk, "scope": "batch", "batch": other_batch.pk},
        {"judge": judge.pk, "scope": "flagged"},
        {"judge": judge.pk, "ask_again": True},
        {"judge": other_judge.pk},
    ]
    for body in bodies:
        answer = post_json(client, RUNS, body)
        assert answer.status_code == 201 and answer.json()["existing"] is False, body
    save_prompt(project, "rubric", prompts.default_prompt("rubric") + "\nBe strict about dates.", by=admin_user)
    edited = post_json(client, RUNS, {"judge": judge.pk})
    assert edited.status_code == 201 and edited.json()["rubric_version"] == 2
    assert post_json(client, RUNS, {"judge": judge.pk}).json()["id"] == edited.json()["id"]
    assert JudgeRun.objects.count() == len(bodies) + 1


def test_a_queued_triage_run_of_the_judge_is_no_plain_run(batch: Batch, admin_user: Any) -> None:
    judge = rubric_judge(batch.project)
    JudgeRun.objects.create(project=batch.project, judge=judge, purpose=JudgeRun.Purpose.FIRST_PASS,
                            scope=JudgeRun.Scope.ALL, rubric=judge_services.current_prompt(batch.project, "rubric"))
    answer = post_json(login(admin_user), RUNS, {"judge": judge.pk})
    assert answer.status_code == 201 and JudgeRun.objects.count() == 2


def test_a_refused_run_is_still_400_and_starts_nothing(batch: Batch, admin_user: Any) -> None:
    judge = rubric_judge(batch.project)
    client = login(admin_user)
    assert post_json(client, RUNS, {"judge": judge.pk}).status_code == 201
    refused = post_json(client, RUNS, {"judge": judge.pk, "scope": "batch"})
    assert refused.status_code == 400 and list(refused.json()) == ["batch"]
    assert JudgeRun.objects.count() == 1


def test_the_schema_says_a_retry_answers_the_existing_run(client: Client, admin_user: Any) -> None:
    client.force_login(admin_user)
    document = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operation = document["paths"]["/api/projects/{slug}/judge-runs/"]["post"]
    assert "Safe to retry" in operation["description"]
    assert {"200", "201"} <= set(operation["responses"])
    for status in ("200", "201"):
        reference = operation["responses"][status]["content"]["application/json"]["schema"]["$ref"]
        fields = document["components"]["schemas"][reference.rsplit("/", 1)[-1]]["properties"]
        assert fields["existing"]["type"] == "boolean"


# --------------------------------------------------------------------------- a judge name in use


def test_a_judge_name_in_use_is_400_naming_the_judge_that_holds_it(batch: Batch, admin_user: Any) -> None:
    holder = rubric_judge(batch.project, "gpt-judge")
    answer = post_json(login(admin_user), JUDGES, {"name": "gpt-judge", "kind": "rubric",
                                                  "base_url": "http://127.0.0.1:9/v1", "model": "tiny"})
    assert answer.status_code == 400
    assert answer.json()["name"] == [
        f"Name 'gpt-judge' is already used by another judge of this project (id {holder.pk})."
    ]
    assert Judge.objects.count() == 1


def test_a_name_taken_meanwhile_names_the_judge_too(batch: Batch, monkeypatch: pytest.MonkeyPatch) -> None:
    """Saved by someone else between the check and the insert: the unique constraint refuses, with the id."""
    holder = rubric_judge(batch.project, "gpt-judge")
    checked = judge_services.check_new_judge

    def check_before_the_other_save(project: Project, **kwargs: Any) -> Any:
        cleaned, problems = checked(project, **{**kwargs, "name": "unused"})
        return {**cleaned, "name": "gpt-judge"}, problems

    monkeypatch.setattr(judge_edit, "check_new_judge", check_before_the_other_save)  # create_judge calls it
    with pytest.raises(judge_services.JudgeSettingsError) as refused:
        judge_services.create_judge(batch.project, name="gpt-judge", kind="rubric",
                                    base_url="http://127.0.0.1:9/v1", model="tiny")
    assert str(refused.value) == f"Name 'gpt-judge' is already used by another judge of this project (id {holder.pk})."
