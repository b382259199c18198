"""Blocking a flagged judge through the API needs a reason, as the flags page does: POST
/api/projects/<slug>/flags/<id>/block/ with ``{}`` used to block the judge with no reason at all."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from annotate.models import BlockedJudge, JudgeFlag, Project
from tests.conftest import login

pytestmark = pytest.mark.django_db

NO_REASON = "say why you block this judge; it is kept with the block. Nothing was changed."


@pytest.fixture
def flag(pairs_project: Project, bob: Any) -> JudgeFlag:
    return JudgeFlag.objects.create(project=pairs_project, judge=bob, rule=JudgeFlag.Rule.TOO_FAST,
                                    figures={"judgements": 10, "mean_seconds": 2.0, "limit_seconds": 10.0})


def block_by_api(client: Client, flag: JudgeFlag, body: Any) -> Any:
    url = f"/api/projects/{flag.project.slug}/flags/{flag.pk}/block/"
    if body is None:
        return client.post(url)
    return client.post(url, json.dumps(body), content_type="application/json")


def nothing_blocked(flag: JudgeFlag) -> bool:
    flag.refresh_from_db()
    return not BlockedJudge.objects.exists() and flag.status == JudgeFlag.Status.OPEN and flag.reviewed_by is None


@pytest.mark.parametrize(("body", "words"), [
    ({}, "reason is required"),
    (None, "reason is required"),  # no body at all
    ({"reason": ""}, "reason is empty"),
    ({"reason": "   \n "}, "reason is empty"),  # spaces only: the page trims them too
    ({"reason": None}, "reason is null"),
])
def test_blocking_without_a_reason_is_400_naming_reason_and_blocks_nobody(
    flag: JudgeFlag, admin_user: Any, body: Any, words: str
) -> None:
    response = block_by_api(login(admin_user), flag, body)
    assert response.status_code == 400, response.content
    assert response.json() == {"reason": [f"{words}: {NO_REASON}"]}
    assert nothing_blocked(flag)


def test_the_flags_page_refuses_the_same_blank_reason(flag: JudgeFlag, admin_user: Any) -> None:
    """The rule the API now follows: the page's block form with a blank reason blocks nobody."""
    page = login(admin_user).post(f"/projects/{flag.project.slug}/pairs/flags/{flag.pk}/block/", {"reason": "  "},
                                  HTTP_HX_REQUEST="true")
    assert page.status_code == 200 and "say why you block this judge" in page.content.decode()
    assert nothing_blocked(flag)


def test_a_reason_blocks_the_judge_and_is_kept_trimmed(flag: JudgeFlag, admin_user: Any) -> None:
    response = block_by_api(login(admin_user), flag, {"reason": "  2 s an item, always H \n"})
    assert response.status_code == 200, response.content
    assert response.json()["flag"]["status"] == "blocked" and response.json()["flag"]["judge_blocked"] is True
    assert BlockedJudge.objects.get(judge=flag.judge).reason == "2 s an item, always H"


def test_a_non_admin_without_a_reason_is_still_refused_by_role(flag: JudgeFlag, alice: Any, charlie: Any) -> None:
    """Who may block is decided before the body is read: the missing reason tells others nothing."""
    assert block_by_api(login(alice), flag, {}).status_code == 403
    assert block_by_api(login(charlie), flag, {}).status_code == 404
    assert nothing_blocked(flag)


def test_the_schema_requires_a_reason(admin_user: Any) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operation = document["paths"]["/api/projects/{slug}/flags/{id}/block/"]["post"]
    assert operation["requestBody"].get("required") is True
    body = document["components"]["schemas"]["BlockRequest"]
    assert body["required"] == ["reason"] and body["properties"]["reason"]["minLength"] == 1
    assert "400" in operation["responses"]
