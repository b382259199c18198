"""A body field an endpoint does not take is a 400 naming it, and nothing is saved, as POST /api/spans/ does.

These endpoints used to drop such fields unread (``{"label": "H", "note": ...}``
recorded the label and lost the note; a misspelt ``scoep`` started a run over
every sample). They share POST /api/spans/'s mechanism, RejectsUnknownFields.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from annotate.models import (
    Batch,
    BlockedJudge,
    JudgeFlag,
    PairJudgement,
    Project,
    SampleReview,
)
from annotate.services.pairs import queue
from judging.models import Judge, JudgeRun
from tests.conftest import login

pytestmark = pytest.mark.django_db


def post_json(client: Client, url: str, body: Any) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.fixture
def flag(two_item_pairs: Project, bob: Any) -> JudgeFlag:
    return JudgeFlag.objects.create(project=two_item_pairs, judge=bob, rule=JudgeFlag.Rule.TOO_FAST,
                                    figures={"judgements": 10, "timed": 10, "mean_seconds": 2.0, "limit_seconds": 10.0})


def test_a_judge_run_with_an_unknown_field_is_refused_and_not_started(batch: Batch, admin_user: Any) -> None:
    judge = Judge.objects.create(project=batch.project, name="local", kind=Judge.Kind.RUBRIC,
                                 base_url="http://127.0.0.1:9/v1", model="tiny")
    response = post_json(login(admin_user), "/api/projects/demo/judge-runs/", {"judge": judge.pk, "scoep": "flagged"})
    assert response.status_code == 400
    assert response.json() == {
        "scoep": ["unknown field 'scoep'; nothing was saved (fields you may send: ask_again, batch, judge, scope)"]
    }
    assert not JudgeRun.objects.exists()


def test_an_answer_with_an_unknown_field_is_refused_and_not_recorded(two_item_pairs: Project, alice: Any) -> None:
    served = queue.serve_next_item(two_item_pairs, alice)
    client = login(alice)
    response = post_json(client, f"/api/pairs/{served.item_id}/judgements/", {"label": "H", "note": "looks made up"})
    assert response.status_code == 400
    assert response.json() == {"note": ["unknown field 'note'; nothing was saved (fields you may send: label)"]}
    assert not PairJudgement.objects.filter(answered_at__isnull=False).exists()
    # Its other problems come in the same answer.
    both = post_json(client, f"/api/pairs/{served.item_id}/judgements/", {"label": "maybe", "note": "x"})
    assert set(both.json()) == {"label", "note"}
    assert post_json(client, f"/api/pairs/{served.item_id}/judgements/", {"label": "H"}).status_code == 201


def test_a_review_with_an_unknown_field_is_refused_and_not_saved(batch: Batch, alice: Any) -> None:
    sample = batch.samples.order_by("position").first()
    response = post_json(login(alice), f"/api/samples/{sample.pk}/review/", {"done": True, "second": 30})
    assert response.status_code == 400
    assert response.json() == {
        "second": ["unknown field 'second'; nothing was saved (fields you may send: done, round, seconds)"]
    }
    assert not SampleReview.objects.exists()


def test_dismissing_a_flag_takes_no_fields(flag: JudgeFlag, admin_user: Any) -> None:
    client = login(admin_user)
    url = f"/api/projects/pairs/flags/{flag.pk}/dismiss/"
    response = post_json(client, url, {"reason": "a fast reader"})
    assert response.status_code == 400
    assert response.json() == {"reason": ["unknown field 'reason'; nothing was saved (this endpoint takes no fields)"]}
    flag.refresh_from_db()
    assert flag.status == JudgeFlag.Status.OPEN
    assert post_json(client, url, {}).json()["status"] == JudgeFlag.Status.DISMISSED


def test_dismissing_without_a_body_still_works(flag: JudgeFlag, admin_user: Any) -> None:
    response = login(admin_user).post(f"/api/projects/pairs/flags/{flag.pk}/dismiss/")
    assert response.status_code == 200 and response.json()["status"] == JudgeFlag.Status.DISMISSED


def test_blocking_with_an_unknown_field_is_refused_and_blocks_nobody(flag: JudgeFlag, admin_user: Any) -> None:
    response = post_json(login(admin_user), f"/api/projects/pairs/flags/{flag.pk}/block/", {"reson": "3 s an item"})
    assert response.status_code == 400
    assert response.json() == {
        "reson": ["unknown field 'reson'; nothing was saved (fields you may send: reason)"],
        "reason": ["reason is required: say why you block this judge; it is kept with the block. Nothing was changed."],
    }
    assert not BlockedJudge.objects.exists()


def test_the_schema_says_these_bodies_take_no_other_field(admin_user: Any) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for name in ("JudgeRunRequest", "PairJudgementRequest", "Review", "BlockRequest"):
        assert document["components"]["schemas"][name]["additionalProperties"] is False, name
    dismiss = document["paths"]["/api/projects/{slug}/flags/{id}/dismiss/"]["post"]
    assert dismiss["requestBody"]["content"]["application/json"]["schema"]["additionalProperties"] is False
    assert "required" not in dismiss["requestBody"]  # no body at all is fine too
    assert "400" in dismiss["responses"]
