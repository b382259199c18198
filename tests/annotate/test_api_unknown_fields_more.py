"""More write endpoints refuse a body field they do not take (400 naming it, nothing changed), as POST /api/spans/
does: the gold label, a sample's flag, the similarity request, pair undo and lifting a judge's block.

They used to drop such fields unread: ``{"span_ids": [], "label": "U"}`` saved a consistent gold label and lost
the label; a flag's misspelt ``coment`` raised the flag without its comment. They share one mechanism,
annotate.api.validation.RejectsUnknownFields (NoBodySerializer for the actions that take no fields).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from annotate.models import (
    BlockedJudge,
    GoldLabel,
    JudgeFlag,
    PairJudgement,
    Project,
    Sample,
    SampleFlag,
)
from annotate.services.pairs import flags as pair_flags
from annotate.services.pairs import queue
from tests.conftest import login

pytestmark = pytest.mark.django_db


def post_json(client: Client, url: str, body: Any, method: str = "post") -> Any:
    return getattr(client, method)(url, json.dumps(body), content_type="application/json")


@pytest.fixture
def blocked_flag(two_item_pairs: Project, admin_user: Any, bob: Any) -> JudgeFlag:
    flag = JudgeFlag.objects.create(project=two_item_pairs, judge=bob, rule=JudgeFlag.Rule.TOO_FAST,
                                    figures={"judgements": 10, "timed": 10, "mean_seconds": 2.0, "limit_seconds": 10.0})
    pair_flags.block_judge(two_item_pairs, bob, admin_user, "3 s an item")
    return flag


# --------------------------------------------------------------------------- span projects


def test_a_gold_label_with_an_unknown_field_is_refused_and_not_saved(sample: Sample, admin_user: Any) -> None:
    url = f"/api/samples/{sample.pk}/gold/"
    response = post_json(login(admin_user), url, {"span_ids": [], "label": "U"}, method="put")
    assert response.status_code == 400
    assert response.json() == {
        "label": ["unknown field 'label'; nothing was saved (fields you may send: base_decided_at, round, span_ids)"]
    }
    assert not GoldLabel.objects.exists()
    assert post_json(login(admin_user), url, {"span_ids": []}, method="put").status_code == 200


def test_a_gold_labels_unknown_field_comes_with_its_other_problems(sample: Sample, admin_user: Any) -> None:
    response = post_json(login(admin_user), f"/api/samples/{sample.pk}/gold/", {"spans": [1]}, method="put")
    assert response.status_code == 400
    assert set(response.json()) == {"span_ids", "spans"}  # the missing field and the misspelt one, at once


def test_a_flag_with_an_unknown_field_is_refused_and_not_raised(sample: Sample, alice: Any) -> None:
    url = f"/api/samples/{sample.pk}/flag/"
    response = post_json(login(alice), url, {"kind": "broken", "coment": "summary cut off"})
    assert response.status_code == 400
    assert response.json() == {
        "coment": ["unknown field 'coment'; nothing was saved (fields you may send: comment, kind, round)"]
    }
    assert not SampleFlag.objects.exists()
    assert post_json(login(alice), url, {"kind": "broken", "comment": "cut off"}).status_code == 201


def test_a_similarity_request_with_an_unknown_field_is_refused(sample: Sample, alice: Any) -> None:
    # Refused before the embeddings are looked at: without the field this sample answers 409 (not embedded yet).
    url = f"/api/samples/{sample.pk}/similarity/"
    response = post_json(login(alice), url, {"side": "summary", "start": 0, "end": 5, "top": 3})
    assert response.status_code == 400
    assert response.json() == {"top": ["unknown field 'top'; nothing was saved (fields you may send: end, side, start)"]}
    assert post_json(login(alice), url, {"side": "summary", "start": 0, "end": 5}).status_code == 409


# --------------------------------------------------------------------------- pairs projects


def test_undo_with_an_unknown_field_is_refused_and_the_answer_stays(two_item_pairs: Project, alice: Any) -> None:
    client = login(alice)
    served = queue.serve_next_item(two_item_pairs, alice)
    assert post_json(client, f"/api/pairs/{served.item_id}/judgements/", {"label": "H"}).status_code == 201
    response = post_json(client, "/api/pairs/undo/?project=pairs", {"item": served.item_id})
    assert response.status_code == 400
    assert response.json() == {"item": ["unknown field 'item'; nothing was saved (this endpoint takes no fields)"]}
    assert PairJudgement.objects.get(item_id=served.item_id, judge=alice).answered_at is not None


@pytest.mark.parametrize("body", [None, {}], ids=["no body", "empty object"])
def test_undo_without_fields_still_works(two_item_pairs: Project, alice: Any, body: Any) -> None:
    client = login(alice)
    served = queue.serve_next_item(two_item_pairs, alice)
    post_json(client, f"/api/pairs/{served.item_id}/judgements/", {"label": "H"})
    url = "/api/pairs/undo/?project=pairs"
    response = client.post(url) if body is None else post_json(client, url, body)
    assert response.status_code == 200 and response.json()["id"] == served.item_id


def test_unblocking_with_an_unknown_field_is_refused_and_the_block_stays(
    blocked_flag: JudgeFlag, admin_user: Any
) -> None:
    url = f"/api/projects/pairs/flags/{blocked_flag.pk}/unblock/"
    response = post_json(login(admin_user), url, {"reason": "served their time"})
    assert response.status_code == 400
    assert response.json() == {"reason": ["unknown field 'reason'; nothing was saved (this endpoint takes no fields)"]}
    assert BlockedJudge.objects.filter(judge=blocked_flag.judge).exists()


@pytest.mark.parametrize("body", [None, {}], ids=["no body", "empty object"])
def test_unblocking_without_fields_still_works(blocked_flag: JudgeFlag, admin_user: Any, body: Any) -> None:
    url = f"/api/projects/pairs/flags/{blocked_flag.pk}/unblock/"
    client = login(admin_user)
    response = client.post(url) if body is None else post_json(client, url, body)
    assert response.status_code == 200 and response.json()["flag"]["judge_blocked"] is False
    assert not BlockedJudge.objects.exists()


def test_the_schema_says_these_bodies_take_no_other_field(admin_user: Any) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for name in ("GoldRequest", "FlagRequest", "SimilarityRequest"):
        assert document["components"]["schemas"][name]["additionalProperties"] is False, name
    for path in ("/api/pairs/undo/", "/api/projects/{slug}/flags/{id}/unblock/"):
        operation = document["paths"][path]["post"]
        assert operation["requestBody"]["content"]["application/json"]["schema"]["additionalProperties"] is False
        assert "required" not in operation["requestBody"], path  # no body at all is fine too
        assert "400" in operation["responses"], path
