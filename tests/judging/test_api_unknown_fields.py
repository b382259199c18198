"""The judging API's writes refuse a body field they do not take (400 naming it, nothing saved), as POST /api/spans/
and judge runs do: an auditor's verdict and a new judge.

They used to drop such fields unread: a verdict's misspelt ``reasoning_wromg`` recorded the verdict with the
reasoning marked right; a judge's ``temperature`` was lost and the judge made without it. A new judge's unknown
field comes in the one answer that names every other problem of the request (JudgeCreateSerializer with
check_new_judge).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from annotate.models import Batch
from judging.models import Audit, Judge
from tests.conftest import login
from tests.judging import audit_helpers
from tests.judging.audit_helpers import AuditScene

scene = audit_helpers.scene

pytestmark = pytest.mark.django_db

JUDGES_URL = "/api/projects/demo/judges/"
RUBRIC = {"name": "llama", "kind": "rubric", "base_url": "http://localhost:11434/v1", "model": "llama3.1"}


def post_json(client: Client, url: str, body: Any) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


def unknown(name: str, allowed: str) -> list[str]:
    return [f"unknown field {name!r}; nothing was saved (fields you may send: {allowed})"]


# --------------------------------------------------------------------------- audit verdicts


def test_a_verdict_with_an_unknown_field_is_refused_and_not_recorded(scene: AuditScene) -> None:
    client = login(scene.auditor)
    item = client.get(f"/api/projects/{scene.project.slug}/audit/next/").json()["item"]
    url = f"/api/audit-items/{item}/audits/"
    response = post_json(client, url, {"score": 2, "reasoning_wromg": True})
    assert response.status_code == 400
    assert response.json() == {"reasoning_wromg": unknown("reasoning_wromg", "agreed, note, reasoning_wrong, score")}
    assert not Audit.objects.filter(answered_at__isnull=False).exists()
    # With its other problems in the same answer; the right fields are then recorded.
    both = post_json(client, url, {"score": 9, "comment": "x"})
    assert set(both.json()) == {"score", "comment"}
    assert post_json(client, url, {"score": 2, "reasoning_wrong": True}).status_code == 201


# --------------------------------------------------------------------------- new judges


def test_a_judge_with_an_unknown_field_is_refused_and_not_made(batch: Batch, admin_user: Any) -> None:
    response = post_json(login(admin_user), JUDGES_URL, {**RUBRIC, "temperature": 0.2})
    assert response.status_code == 400
    errors = response.json()
    assert list(errors) == ["temperature"]
    assert errors["temperature"][0].startswith("unknown field 'temperature'; nothing was saved (fields you may send: ")
    assert "base_url" in errors["temperature"][0] and "nli_model_path" in errors["temperature"][0]
    assert not Judge.objects.exists()
    assert post_json(login(admin_user), JUDGES_URL, RUBRIC).status_code == 201


def test_a_judges_unknown_field_comes_with_every_other_problem_at_once(batch: Batch, admin_user: Any) -> None:
    # A type error (the serializer's), a missing setting (the service's) and an unknown field, in one 400.
    body = {"name": "llama", "kind": "rubric", "base_url": "http://localhost:11434/v1", "concurrency": "many",
            "modle": "llama3.1"}
    response = post_json(login(admin_user), JUDGES_URL, body)
    assert response.status_code == 400
    assert set(response.json()) == {"concurrency", "model", "modle"}
    assert not Judge.objects.exists()


def test_the_schema_says_these_bodies_take_no_other_field(admin_user: Any) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for name in ("AuditRequest", "JudgeCreate"):
        assert document["components"]["schemas"][name]["additionalProperties"] is False, name
