"""The judging API on a pairs project: its members get 400 on ``project`` naming the kind, not a 404.

Judges, runs, judgements, audits and their exports are span projects' only. The API
answered a member of a pairs project 404, as if the project did not exist; now it
says what kind the project is. Outsiders still get the same 404 as for a slug that
names nothing (no existence leak), anonymous callers 401, and nothing is written.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotate.models import Membership, Project
from judging.models import Judge, Judgement, JudgeRun
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db

# (method, path under /api/projects/<slug>/, body): every judging endpoint that names a project.
ENDPOINTS = [
    ("get", "judges/", None),
    ("post", "judges/", {"name": "llama", "kind": "rubric", "base_url": "http://localhost:1/v1", "model": "m"}),
    ("get", "judge-runs/", None),
    ("post", "judge-runs/", {"judge": 1, "scope": "all"}),
    ("post", "judgements/import/", "multipart"),
    ("get", "judgements/export/", None),
    ("get", "audits/export/", None),
    ("get", "audit/next/", None),
]
IDS = [f"{method} {path}" for method, path, _ in ENDPOINTS]
JSONL = b'{"sample": "0", "judge": "j", "score": 3}\n'


@pytest.fixture
def pairs(admin_user: Any, alice: Any) -> Project:
    """A pairs project with an admin, an annotator and an auditor; charlie (the outsider) is in no project."""
    project = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    Membership.objects.create(project=project, user=admin_user, role=Membership.Role.ADMIN)
    Membership.objects.create(project=project, user=alice, role=Membership.Role.ANNOTATOR)
    Membership.objects.create(project=project, user=make_user("audrey"), role=Membership.Role.AUDITOR)
    return project


def call(client: Client, method: str, slug: str, path: str, body: Any) -> Any:
    url = f"/api/projects/{slug}/{path}"
    if body == "multipart":
        return client.post(url, {"file": SimpleUploadedFile("a.jsonl", JSONL), "flag": "true"})
    if body is not None:
        return getattr(client, method)(url, json.dumps(body), content_type="application/json")
    return getattr(client, method)(url)


def members(pairs: Project) -> list[Any]:
    return [membership.user for membership in pairs.memberships.select_related("user")]


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS, ids=IDS)
def test_every_member_of_a_pairs_project_is_told_its_kind_and_nothing_is_written(
    pairs: Project, method: str, path: str, body: Any
) -> None:
    assert len(members(pairs)) == 3  # admin, annotator, auditor: whatever their role
    for user in members(pairs):
        answer = call(login(user), method, "pairs", path, body)
        assert answer.status_code == 400, (user.username, answer.content[:300])
        assert set(answer.json()) == {"project"}
        (message,) = answer.json()["project"]
        assert message.startswith("'pairs' is a pairs project (perturbed pairs): judges, judge runs, judgements "
                                  "and audits work on span projects only (kind 'spans'); nothing was changed")
        assert "/api/pairs/?project=pairs" in message  # where its own answers are
    assert not Judge.objects.exists() and not JudgeRun.objects.exists() and not Judgement.objects.exists()


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS, ids=IDS)
def test_an_outsider_gets_the_404_of_a_slug_that_names_nothing(
    pairs: Project, charlie: Any, method: str, path: str, body: Any
) -> None:
    client = login(charlie)
    answer = call(client, method, "pairs", path, body)
    nothing = call(client, method, "no-such-project", path, body)
    assert answer.status_code == nothing.status_code == 404
    assert answer.json() == nothing.json()  # the pairs project's existence does not leak


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS, ids=IDS)
def test_an_anonymous_caller_gets_401(pairs: Project, method: str, path: str, body: Any) -> None:
    answer = call(Client(), method, "pairs", path, body)
    assert answer.status_code == 401
    assert answer["WWW-Authenticate"] == "Token"


def test_a_span_projects_judges_are_still_served_and_its_roles_still_checked(
    project: Project, admin_user: Any, alice: Any
) -> None:
    assert login(admin_user).get("/api/projects/demo/judges/").json() == []
    refused = login(alice).get("/api/projects/demo/judges/")
    assert refused.status_code == 403 and "project" not in refused.json()


def test_the_schema_lists_the_400_of_every_judging_endpoint_that_names_a_project(admin_user: Any) -> None:
    client = login(admin_user)
    paths = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["paths"]
    for method, path, _ in ENDPOINTS:
        responses = paths[f"/api/projects/{{slug}}/{path}"][method]["responses"]
        assert "400" in responses, (method, path)
        assert "span project" in responses["400"]["description"], (method, path)
