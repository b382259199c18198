"""The audit API: GET /api/projects/<slug>/audit/next/ (200 with the texts and every judge's answer, 204 when
nothing is left) and POST /api/audit-items/<id>/audits/ (201, 409 on a second verdict), the statuses the
OpenAPI schema lists, and who may call them."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from annotate.models import Batch, Membership, Project
from judging.models import Audit
from tests.conftest import login
from tests.judging import audit_helpers
from tests.judging.audit_helpers import (
    AuditScene,
    Clock,
    build_scene,
)

# The audit scene and the queue's clock (fixtures of tests/judging/audit_helpers.py).
scene = audit_helpers.scene
clock = audit_helpers.clock

pytestmark = pytest.mark.django_db


def next_url(project: Project) -> str:
    return f"/api/projects/{project.slug}/audit/next/"


def verdict_url(item_id: int) -> str:
    return f"/api/audit-items/{item_id}/audits/"


def post(client: Client, item_id: int, body: dict[str, Any]) -> Any:
    return client.post(verdict_url(item_id), body, content_type="application/json")


def test_next_answers_the_worst_item_with_texts_judges_and_quotes(scene: AuditScene, clock: Clock) -> None:
    client = login(scene.auditor)
    client.get(next_url(scene.project))  # output 1, served
    post(client, scene.queue_order[0].pk, {"score": 3})
    response = client.get(next_url(scene.project))
    assert response.status_code == 200
    body = response.json()
    sample = scene.samples[0]
    assert (body["item"], body["sample"], body["external_id"]) == (scene.items[0].pk, sample.pk, "0")
    assert (body["source"], body["output"]) == (sample.passage.text, sample.summary)
    assert body["sentences"] == [[0, 73], [74, len(sample.summary)]]
    assert body["sentence_scores"] is None
    assert body["served_at"] == "2026-03-02T09:00:00Z"
    assert (body["shown_judgement"], body["agree_score"]) == (scene.explanations[0].pk, 2)
    explainer, nli = body["judges"]
    assert (explainer["judge"], explainer["score"], explainer["label"], explainer["shown"]) == (
        "gpt-explainer", 2, "very unfaithful", True
    )
    assert (nli["judge"], nli["score"], nli["probability"], nli["score_text"]) == (
        "nli-first", None, 0.3, "p = 0.300 · 1 + 4p = 2.20"
    )
    start = sample.summary.index("nine weeks")
    assert explainer["quotes"][0] == {
        "quote": "nine weeks of repairs", "index": 0, "where": "output", "start": start, "end": start + 21,
        "reasoning_start": 17, "reasoning_end": 38,
    }
    assert explainer["quotes"][-1]["where"] is None
    assert body["progress"] == {"answered": 1, "left": 2, "items": 3, "complete": 1, "audits_per_item": 1}


def test_next_gives_the_same_item_until_it_is_answered_and_204_at_the_end(scene: AuditScene) -> None:
    client = login(scene.auditor)
    first = client.get(next_url(scene.project)).json()
    assert client.get(next_url(scene.project)).json()["item"] == first["item"]
    for item in scene.queue_order:
        assert client.get(next_url(scene.project)).json()["item"] == item.pk
        assert post(client, item.pk, {"agreed": False, "score": 2}).status_code == 201
    empty = client.get(next_url(scene.project))
    assert empty.status_code == 204 and empty.content == b""


def test_a_verdict_answers_201_with_the_server_measured_seconds(scene: AuditScene, clock: Clock) -> None:
    client = login(scene.auditor)
    item = client.get(next_url(scene.project)).json()["item"]
    clock.advance(7.25)
    response = post(client, item, {"score": 4, "agreed": False, "reasoning_wrong": True, "note": "Date is fine."})
    assert response.status_code == 201
    body = response.json()
    audit = Audit.objects.get(item_id=item, auditor=scene.auditor)
    assert body == {
        "id": audit.pk, "item": item, "score": 4, "agreed": False, "reasoning_wrong": True, "note": "Date is fine.",
        "blind": False, "blind_score": None, "judgement": scene.explanations[1].pk, "served_at": "2026-03-02T09:00:00Z",
        "answered_at": "2026-03-02T09:00:07.250000Z", "seconds": 7.25, "changed_at": None,
    }


def test_agreeing_takes_the_judges_score(scene: AuditScene) -> None:
    client = login(scene.auditor)
    item = client.get(next_url(scene.project)).json()["item"]
    response = post(client, item, {"agreed": True})
    assert response.status_code == 201 and response.json()["score"] == 3 and response.json()["agreed"] is True


def test_a_second_verdict_is_409_and_changes_nothing(scene: AuditScene) -> None:
    client = login(scene.auditor)
    item = client.get(next_url(scene.project)).json()["item"]
    assert post(client, item, {"score": 2}).status_code == 201
    again = post(client, item, {"score": 5})
    assert again.status_code == 409
    audit = Audit.objects.get(item_id=item)
    assert again.json() == {
        "detail": f"you audited this item already (score 2); an item is answered once: change that verdict as audit "
        f"{audit.pk} instead (u on the audit page, PUT /api/audits/{audit.pk}/)",
        "code": "already_audited",
    }
    assert Audit.objects.get(item_id=item).score == 2


def test_an_item_not_served_to_you_is_409(scene: AuditScene) -> None:
    response = post(login(scene.auditor), scene.items[2].pk, {"score": 2})
    assert response.status_code == 409 and response.json()["code"] == "not_served"


def test_agreeing_with_an_nli_probability_is_409(scene: AuditScene) -> None:
    scene.settings.explainer = None
    scene.settings.save()
    client = login(scene.auditor)
    item = client.get(next_url(scene.project)).json()["item"]
    response = post(client, item, {"agreed": True})
    assert response.status_code == 409 and response.json()["code"] == "nothing_to_agree"


@pytest.mark.parametrize(
    ("body", "field"),
    [({"score": 7}, "score"), ({"score": 0}, "score"), ({"score": "four"}, "score"), ({}, "score"),
     ({"score": 3, "note": "x" * 5001}, "note"), ({"score": 3, "agreed": "perhaps"}, "agreed")],
)
def test_bad_input_is_400_naming_the_field(scene: AuditScene, body: dict[str, Any], field: str) -> None:
    client = login(scene.auditor)
    item = client.get(next_url(scene.project)).json()["item"]
    response = post(client, item, body)
    assert response.status_code == 400 and field in response.json()
    assert not Audit.objects.filter(answered_at__isnull=False).exists()


def test_annotators_get_403_outsiders_404_anonymous_401(scene: AuditScene, alice: Any, charlie: Any) -> None:
    assert login(alice).get(next_url(scene.project)).status_code == 403
    assert post(login(alice), scene.items[0].pk, {"score": 3}).status_code == 403
    assert login(charlie).get(next_url(scene.project)).status_code == 404
    assert post(login(charlie), scene.items[0].pk, {"score": 3}).status_code == 404
    assert Client().get(next_url(scene.project)).status_code == 401
    assert post(Client(), scene.items[0].pk, {"score": 3}).status_code == 401
    assert not Audit.objects.exists()


def test_a_pairs_project_is_named_to_its_auditor_and_missing_items_are_404(scene: AuditScene) -> None:
    pairs = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    Membership.objects.create(project=pairs, user=scene.auditor, role=Membership.Role.AUDITOR)
    client = login(scene.auditor)
    assert client.get(next_url(pairs)).status_code == 400  # its kind named (tests/judging/test_api_pairs_kind.py)
    assert post(client, 999999, {"score": 3}).status_code == 404
    assert post(client, 10**18, {"score": 3}).status_code == 404  # past the documented id range


def test_an_empty_queue_is_204_for_admins(project: Project, batch: Batch, admin_user: Any) -> None:
    assert login(admin_user).get(next_url(project)).status_code == 204


def test_two_audits_per_item_reach_two_auditors(project: Project, batch: Batch) -> None:
    scene = build_scene(project, batch, audits_per_item=2)
    hedy = Membership.objects.create(
        project=project, user=type(scene.auditor).objects.create_user("hedy"), role=Membership.Role.AUDITOR
    ).user
    assert login(scene.auditor).get(next_url(project)).json()["item"] == login(hedy).get(next_url(project)).json()["item"]


def test_the_schema_lists_what_the_endpoints_answer(client: Client, admin_user: Any) -> None:
    client.force_login(admin_user)
    paths = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["paths"]
    # 400: a pairs project, named to its members.
    next_op = paths["/api/projects/{slug}/audit/next/"]["get"]
    assert set(next_op["responses"]) == {"200", "204", "400", "401", "403", "404"}
    post_op = paths["/api/audit-items/{id}/audits/"]["post"]
    assert set(post_op["responses"]) == {"200", "201", "400", "401", "403", "404", "409"}  # 200: a retry
    conflict = post_op["responses"]["409"]["content"]["application/json"]["schema"]
    assert conflict == {"$ref": "#/components/schemas/AuditConflict"}
    (identifier,) = post_op["parameters"]
    assert identifier["schema"] == {"type": "integer", "minimum": 1, "maximum": 10**18 - 1}
