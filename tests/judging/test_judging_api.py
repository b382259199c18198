"""The judges API: admins only (annotators 403, outsiders 404), 400 naming the field, runs, progress and imports."""

from __future__ import annotations

import json
from typing import Any

import pytest
import schemathesis
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from annotate.models import Batch, Membership, Project
from annotate.services import tokens
from judging.models import AuditItem, Judge, Judgement, JudgeRun
from tests.annotate.test_schema import CONFIG
from tests.conftest import login, make_user

SECRET = "sk-proj-AbC123dEf456GhI789jKl0"


@pytest.fixture
def grace(batch: Batch) -> Any:
    """An auditor of the project: audits, but does not manage judges."""
    user = make_user("grace")
    Membership.objects.create(project=batch.project, user=user, role=Membership.Role.AUDITOR)
    return user


def rubric_judge(project: Project, **settings: Any) -> Judge:
    return Judge.objects.create(project=project, name=settings.pop("name", "local"), kind=Judge.Kind.RUBRIC,
                                base_url="http://127.0.0.1:9/v1", model="tiny", **settings)


def post_json(client: Client, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


def upload(client: Client, url: str, *files: tuple[str, bytes], **fields: Any) -> Any:
    data: dict[str, Any] = {"file": [SimpleUploadedFile(name, content, "application/jsonl") for name, content in files]}
    return client.post(url, {**data, **fields})


# --------------------------------------------------------------------------- roles


@pytest.mark.django_db
def test_only_admins_reach_the_judges_api(batch: Batch, admin_user: Any, alice: Any, charlie: Any, grace: Any) -> None:
    run = JudgeRun.objects.create(project=batch.project, judge=rubric_judge(batch.project), status="done")
    reads = ["/api/projects/demo/judges/", "/api/projects/demo/judge-runs/", f"/api/judge-runs/{run.pk}/",
             f"/api/judge-runs/{run.pk}/judgements/"]
    writes = ["/api/projects/demo/judges/", "/api/projects/demo/judge-runs/"]
    for url in reads:
        assert login(admin_user).get(url).status_code == 200, url
        assert login(alice).get(url).status_code == 403, url  # annotators work blind
        assert login(grace).get(url).status_code == 403, url  # auditors audit; they do not manage judges
        assert login(charlie).get(url).status_code == 404, url  # outsiders: no such project or run
        assert Client().get(url).status_code == 401, url
    for url in writes:
        assert post_json(login(alice), url, {}).status_code == 403, url
        assert post_json(login(charlie), url, {}).status_code == 404, url
    imported = upload(login(alice), "/api/projects/demo/judgements/import/", ("a.jsonl", b"{}"))
    assert imported.status_code == 403
    assert upload(login(charlie), "/api/projects/demo/judgements/import/", ("a.jsonl", b"{}")).status_code == 404
    assert Judge.objects.count() == 1 and JudgeRun.objects.count() == 1


@pytest.mark.django_db
def test_a_pairs_project_has_no_judges(admin_user: Any) -> None:
    """Its members are told the kind (tests/judging/test_api_pairs_kind.py has every endpoint and role)."""
    pairs = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    Membership.objects.create(project=pairs, user=admin_user, role=Membership.Role.ADMIN)
    answer = login(admin_user).get("/api/projects/pairs/judges/")
    assert answer.status_code == 400
    assert "is a pairs project" in answer.json()["project"][0]


@pytest.mark.django_db
def test_token_auth_works_as_for_the_rest_of_the_api(batch: Batch, admin_user: Any) -> None:
    rubric_judge(batch.project)
    _, key = tokens.create_api_token(admin_user, "script")
    answer = Client().get("/api/projects/demo/judges/", HTTP_AUTHORIZATION=f"Token {key}")
    assert answer.status_code == 200
    assert [judge["name"] for judge in answer.json()] == ["local"]


# --------------------------------------------------------------------------- judges


@pytest.mark.django_db
def test_an_admin_creates_a_rubric_judge_and_sees_its_settings(batch: Batch, admin_user: Any) -> None:
    answer = post_json(login(admin_user), "/api/projects/demo/judges/", {
        "name": "llama", "kind": "rubric", "base_url": "http://localhost:11434/v1", "model": "llama3.1",
        "api_key_env": "", "with_reasoning": False, "concurrency": 8, "price_input_per_mtok": 0.5,
    })
    assert answer.status_code == 201, answer.json()
    body = answer.json()
    judge = Judge.objects.get(project=batch.project, name="llama")
    assert body["id"] == judge.pk
    assert (body["kind"], body["mode"], body["base_url"], body["model"], body["concurrency"]) == (
        "rubric", "score only", "http://localhost:11434/v1", "llama3.1", 8)
    assert (judge.with_reasoning, judge.price_input_per_mtok, judge.created_by) == (False, 0.5, admin_user)
    listed = login(admin_user).get("/api/projects/demo/judges/").json()
    assert [(j["name"], j["kind"]) for j in listed] == [("llama", "rubric")]


BAD_JUDGES = [
    ({"name": "x", "kind": "rubric", "base_url": "localhost:11434", "model": "m"}, "base_url"),
    ({"name": "x", "kind": "rubric", "model": "m"}, "base_url"),
    ({"name": "x", "kind": "rubric", "base_url": "http://h/v1"}, "model"),
    ({"name": "x", "kind": "rubric", "base_url": "http://h/v1", "model": "m", "nli_model_path": "/srv"}, "nli_model_path"),
    ({"name": "x", "kind": "nli", "nli_model_path": "/no/such/dir"}, "nli_model_path"),
    ({"name": "x", "kind": "rubric", "base_url": "http://h/v1", "model": "m", "concurrency": 0}, "concurrency"),
    ({"name": "x", "kind": "imported"}, "kind"),
    ({"kind": "rubric", "base_url": "http://h/v1", "model": "m"}, "name"),
    ({"name": "local", "kind": "rubric", "base_url": "http://h/v1", "model": "m"}, "name"),  # taken
]


@pytest.mark.django_db
@pytest.mark.parametrize(("body", "field"), BAD_JUDGES, ids=[str(i) for i in range(len(BAD_JUDGES))])
def test_a_judge_that_cannot_be_used_gets_400_naming_the_field(
    batch: Batch, admin_user: Any, body: dict[str, Any], field: str
) -> None:
    rubric_judge(batch.project)
    answer = post_json(login(admin_user), "/api/projects/demo/judges/", body)
    assert answer.status_code == 400
    errors = answer.json()
    assert list(errors) == [field], errors
    assert isinstance(errors[field], list) and errors[field][0]
    assert Judge.objects.count() == 1


@pytest.mark.django_db
def test_a_pasted_api_key_is_refused_and_never_echoed(batch: Batch, admin_user: Any) -> None:
    answer = post_json(login(admin_user), "/api/projects/demo/judges/", {
        "name": "gpt", "kind": "rubric", "base_url": "https://api.openai.com/v1", "model": "gpt-4o",
        "api_key_env": SECRET,
    })
    assert answer.status_code == 400 and list(answer.json()) == ["api_key_env"]
    assert SECRET not in answer.content.decode()
    assert not Judge.objects.exists()


# --------------------------------------------------------------------------- runs


@pytest.mark.django_db
def test_starting_a_run_creates_the_queued_run_row(batch: Batch, admin_user: Any, settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = False  # nothing runs here: the worker would pick the run up after commit
    judge = rubric_judge(batch.project)
    answer = post_json(login(admin_user), "/api/projects/demo/judge-runs/", {"judge": judge.pk})
    assert answer.status_code == 201, answer.json()
    run = JudgeRun.objects.get()
    body = answer.json()
    assert body["id"] == run.pk
    assert (run.judge, run.scope, run.status, run.total, run.created_by) == (judge, "all", "queued", 3, admin_user)
    assert (body["status"], body["total"], body["done"], body["percent"], body["judge_name"]) == (
        "queued", 3, 0, 0, "local")
    assert body["rubric_version"] == run.rubric.number == 1

    in_batch = post_json(login(admin_user), "/api/projects/demo/judge-runs/",
                         {"judge": judge.pk, "scope": "batch", "batch": batch.pk})
    assert in_batch.status_code == 201 and JudgeRun.objects.get(pk=in_batch.json()["id"]).batch == batch
    listed = login(admin_user).get("/api/projects/demo/judge-runs/?limit=1").json()
    assert listed["count"] == 2 and [r["id"] for r in listed["results"]] == [in_batch.json()["id"]]


@pytest.mark.django_db
def test_a_run_that_cannot_start_gets_400_naming_the_field(batch: Batch, admin_user: Any, monkeypatch: Any) -> None:
    monkeypatch.delenv("FAITHLAB_TEST_MISSING_KEY", raising=False)
    project = batch.project
    local = rubric_judge(project)
    keyed = rubric_judge(project, name="keyed", api_key_env="FAITHLAB_TEST_MISSING_KEY")
    imported = Judge.objects.create(project=project, name="elsewhere", kind=Judge.Kind.IMPORTED)
    other = Project.objects.create(name="Other", slug="other")
    foreign = rubric_judge(other)
    foreign_batch = Batch.objects.create(project=other, name="b")
    cases = [
        ({"judge": foreign.pk}, "judge"),
        ({"judge": imported.pk}, "judge"),
        ({"judge": keyed.pk}, "api_key_env"),
        ({"judge": local.pk, "scope": "batch"}, "batch"),
        ({"judge": local.pk, "scope": "batch", "batch": foreign_batch.pk}, "batch"),
        ({"judge": local.pk, "scope": "all", "batch": batch.pk}, "batch"),
        ({"judge": local.pk, "scope": "everything"}, "scope"),
        ({}, "judge"),
    ]
    for body, field in cases:
        answer = post_json(login(admin_user), "/api/projects/demo/judge-runs/", body)
        assert answer.status_code == 400, body
        assert list(answer.json()) == [field], (body, answer.json())
    assert "FAITHLAB_TEST_MISSING_KEY" in post_json(
        login(admin_user), "/api/projects/demo/judge-runs/", {"judge": keyed.pk}).json()["api_key_env"][0]
    assert not JudgeRun.objects.exists()


@pytest.mark.django_db
def test_a_run_can_ask_again_for_unreadable_answers_and_says_so(
    batch: Batch, admin_user: Any, settings: Any, client: Client
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = False  # the runs stay queued: only the choice is looked at
    judge = rubric_judge(batch.project)
    nli = Judge.objects.create(project=batch.project, name="hhem", kind=Judge.Kind.NLI, nli_model_path="/nowhere")
    url = "/api/projects/demo/judge-runs/"
    asked = post_json(login(admin_user), url, {"judge": judge.pk, "ask_again": True})
    plain = post_json(login(admin_user), url, {"judge": judge.pk})
    assert (asked.status_code, plain.status_code) == (201, 201)
    assert (asked.json()["ask_again"], plain.json()["ask_again"]) == (True, False)
    assert JudgeRun.objects.get(pk=asked.json()["id"]).ask_again is True
    assert JudgeRun.objects.get(pk=plain.json()["id"]).ask_again is False
    assert login(admin_user).get(f"/api/judge-runs/{asked.json()['id']}/").json()["ask_again"] is True

    cases = [
        ({"judge": nli.pk, "ask_again": True}, "ask_again", "rubric LLM judges only"),
        ({"judge": judge.pk, "ask_again": "perhaps"}, "ask_again", "valid boolean"),
        ({"judge": judge.pk, "retry_unreadable": True}, "retry_unreadable", ""),  # unknown fields are refused
    ]
    for body, field, words in cases:
        answer = post_json(login(admin_user), url, body)
        assert answer.status_code == 400, body
        assert list(answer.json()) == [field], (body, answer.json())
        assert words in answer.json()[field][0], answer.json()
    assert JudgeRun.objects.count() == 2

    client.force_login(admin_user)
    document = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    request_schema = document["components"]["schemas"]["JudgeRunRequest"]
    assert request_schema["properties"]["ask_again"]["type"] == "boolean"
    assert "ask_again" not in request_schema.get("required", [])
    assert document["components"]["schemas"]["JudgeRun"]["properties"]["ask_again"]["readOnly"] is True


@pytest.mark.django_db
def test_the_progress_endpoint_shows_the_runs_figures_and_its_judgements_page_by_page(
    batch: Batch, admin_user: Any
) -> None:
    judge = rubric_judge(batch.project)
    run = JudgeRun.objects.create(project=batch.project, judge=judge, status="running", total=3, done=2, scored=1,
                                  failed=1, calls=3, cached=0)
    first, second = list(batch.samples.order_by("position"))[:2]
    Judgement.objects.create(run=run, sample=first, status="ok", score=4, reasoning="fine", raw='{"score": 4}')
    Judgement.objects.create(run=run, sample=second, status="parse_error", raw="four-ish", error="no JSON object")

    progress = login(admin_user).get(f"/api/judge-runs/{run.pk}/").json()
    assert (progress["status"], progress["total"], progress["done"], progress["percent"]) == ("running", 3, 2, 67)
    assert progress["summary"] == {
        "run": run.pk, "judge": "local", "mode": "reasoning", "status": "running", "error": "", "items": 3,
        "scored": 1, "failed": 1, "calls": 3, "cached": 0, "flagged": 0, "resumed": 0, "seconds": None,
        # Two answers, neither with token usage: tokens and cost unknown (the totals: test_run_usage_totals.py).
        "input_tokens": None, "output_tokens": None, "cost": None, "calls_with_usage": 0, "calls_without_usage": 2,
        "cached_input_tokens_saved": 0, "cached_output_tokens_saved": 0, "cached_answers_with_usage": 0,
        "cached_answers_without_usage": 0,
        "reasons": {name: "No call sent reported its token usage (some local servers report none)."
                    for name in ("input_tokens", "output_tokens", "cost")},
    }

    page = login(admin_user).get(f"/api/judge-runs/{run.pk}/judgements/?limit=1").json()
    assert page["count"] == 2 and page["next"]
    assert page["results"][0] | {"created_at": None} == {
        "id": page["results"][0]["id"], "sample": first.pk, "sample_id": first.pk, "sample_external_id": "0",
        "synthetic_item": None, "status": "ok", "score": 4, "p": None, "display_score": 4.0, "label": "very faithful",
        "reasoning": "fine", "raw": '{"score": 4}', "error": "", "prompt_version": None, "request_mode": "",
        "latency_seconds": None, "input_tokens": None, "output_tokens": None, "cost": None, "cached": False,
        "cached_call_latency_seconds": None, "cached_call_input_tokens": None, "cached_call_output_tokens": None,
        "attempts": 0, "created_at": None,
    }
    failed = login(admin_user).get(f"/api/judge-runs/{run.pk}/judgements/?offset=1").json()["results"][0]
    assert (failed["status"], failed["score"], failed["display_score"], failed["label"], failed["raw"]) == (
        "parse_error", None, None, None, "four-ish")
    assert login(admin_user).get("/api/judge-runs/999999/").status_code == 404


# --------------------------------------------------------------------------- imports


@pytest.mark.django_db
def test_the_import_endpoint_takes_jsonl_files_and_can_flag(batch: Batch, admin_user: Any) -> None:
    lines = b'{"sample": "0", "judge": "fast", "p": 0.1}\n{"sample": "1", "judge": "fast", "p": 0.9}\n'
    more = b'{"sample": "2", "judge": "explainer", "score": 2, "reasoning": "It adds \\"30 km/h\\"."}\n'
    answer = upload(login(admin_user), "/api/projects/demo/judgements/import/", ("a.jsonl", lines),
                    ("b.jsonl", more), flag="true")
    assert answer.status_code == 201, answer.json()
    body = answer.json()
    assert (body["project"], body["judgements"], body["flagged"]) == ("demo", 3, 2)
    assert sorted((r["judge"], r["items"], r["flagged"]) for r in body["runs"]) == [("explainer", 1, 1), ("fast", 2, 1)]
    assert set(AuditItem.objects.values_list("sample__external_id", flat=True)) == {"0", "2"}
    assert set(Judge.objects.values_list("kind", flat=True)) == {"imported"}


@pytest.mark.django_db
def test_a_bad_import_gets_400_listing_every_error_and_writes_nothing(batch: Batch, admin_user: Any) -> None:
    bad = b'{"sample": "0", "judge": "j", "score": 3}\n{"sample": "7", "judge": "j", "score": 3}\n{"judge": "j"}\n'
    answer = upload(login(admin_user), "/api/projects/demo/judgements/import/", ("bad.jsonl", bad))
    assert answer.status_code == 400
    assert answer.json() == {"file": [
        "bad.jsonl: line 2: no sample with external id '7' in project 'demo'",
        "bad.jsonl: line 3: missing field 'score' (an integer 1..5) or 'p' (0..1); status is ok",
    ]}
    assert not Judge.objects.exists() and not Judgement.objects.exists()
    missing = login(admin_user).post("/api/projects/demo/judgements/import/", {})
    assert missing.status_code == 400 and list(missing.json()) == ["file"]


# --------------------------------------------------------------------------- the schema says what they answer


@pytest.mark.django_db
def test_the_schema_describes_the_judges_endpoints_statuses_and_bodies(client: Client, admin_user: Any) -> None:
    client.force_login(admin_user)
    paths = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["paths"]

    def statuses(path: str, method: str) -> set[str]:
        return set(paths[path][method]["responses"])

    assert statuses("/api/projects/{slug}/judges/", "post") == {"201", "400", "401", "403", "404"}
    # 200: the same run still queued or running, answered instead of a second one (test_judge_run_retries).
    assert statuses("/api/projects/{slug}/judge-runs/", "post") == {"200", "201", "400", "401", "403", "404"}
    # 400: a pairs project, named to its members.
    assert statuses("/api/projects/{slug}/judges/", "get") == {"200", "400", "401", "403", "404"}
    # The paginated lists: 400 for a bad limit or offset.
    assert statuses("/api/projects/{slug}/judge-runs/", "get") == {"200", "400", "401", "403", "404"}
    assert statuses("/api/judge-runs/{id}/", "get") == {"200", "401", "403", "404"}
    assert statuses("/api/judge-runs/{id}/judgements/", "get") == {"200", "400", "401", "403", "404"}
    imported = paths["/api/projects/{slug}/judgements/import/"]["post"]
    assert set(imported["requestBody"]["content"]) == {"multipart/form-data"}
    # 409: judgements imported before (test_ingest_repeats).
    assert statuses("/api/projects/{slug}/judgements/import/", "post") == {"201", "400", "401", "403", "404", "409"}
    runs_query = {p["name"] for p in paths["/api/judge-runs/{id}/judgements/"]["get"]["parameters"]}
    assert {"id", "limit", "offset"} <= runs_query


@pytest.mark.django_db
def test_real_answers_of_the_judges_endpoints_match_the_schema(batch: Batch, admin_user: Any) -> None:
    """Each read endpoint with a real run and judgements behind it, checked by schemathesis against the schema."""
    judge = rubric_judge(batch.project)
    run = JudgeRun.objects.create(project=batch.project, judge=judge, status="done", total=2, done=2, scored=1,
                                  failed=1)
    first, second = list(batch.samples.order_by("position"))[:2]
    Judgement.objects.create(run=run, sample=first, status="ok", score=4, reasoning="fine", cost=0.001)
    Judgement.objects.create(run=run, sample=second, status="error", error="HTTP 500")
    _, key = tokens.create_api_token(admin_user, "schema")
    # Kept on this test's connection and transaction, as tests/annotate/test_schema.py does.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        schema = schemathesis.openapi.from_wsgi("/api/schema/", WSGIHandler(), config=CONFIG,
                                              headers={"Authorization": f"Token {key}"})
        calls = [
            ("/api/projects/{slug}/judges/", {"slug": "demo"}),
            ("/api/projects/{slug}/judge-runs/", {"slug": "demo"}),
            ("/api/judge-runs/{id}/", {"id": run.pk}),
            ("/api/judge-runs/{id}/judgements/", {"id": run.pk}),
        ]
        for path, parameters in calls:
            case = schema[path]["GET"].Case(path_parameters=parameters)
            response = case.call_and_validate(
                headers={"Authorization": f"Token {key}"},
                checks=[not_a_server_error, content_type_conformance, response_schema_conformance],
            )
            assert response.status_code == 200, path
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
