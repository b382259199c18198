"""Reading and changing one's own saved verdict by the API: GET /api/audits/<id>/, PUT (the whole verdict, every
field required) and PATCH (only the fields sent change).

A PUT with only ``{"score": 3}`` used to answer 200 and quietly reset the note to "" and ``reasoning_wrong`` to
false; now it is 400 naming each missing field, and nothing changes. PATCH keeps what it is not sent, and follows
the page's rules otherwise: ``answered_at`` and ``seconds`` stay the first answer's, ``changed_at`` says when it
changed, ``blind`` is again whether the final score is the one given blind.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from judging.models import Audit
from judging.services import audits
from judging.services.audits import MAX_NOTE
from tests.conftest import login
from tests.judging import audit_helpers
from tests.judging.audit_helpers import AuditScene, Clock, make_auditor

scene = audit_helpers.scene
clock = audit_helpers.clock

pytestmark = pytest.mark.django_db

SAVED = ("score", "agreed", "reasoning_wrong", "note", "blind", "blind_score", "answered_at", "seconds", "changed_at")


def send(client: Client, method: str, audit_id: int, body: Any = None) -> Any:
    address = f"/api/audits/{audit_id}/"
    if method == "get":
        return client.get(address)
    return getattr(client, method)(address, json.dumps(body), content_type="application/json")


def saved(audit_id: int) -> tuple[Any, ...]:
    audit = Audit.objects.get(pk=audit_id)
    return tuple(getattr(audit, name) for name in SAVED)


def answered(scene: AuditScene, auditor: Any, clock: Clock | None = None, *, score: int | None = 2,
             agreed: bool = False, reasoning_wrong: bool = True, note: str = "Date wrong.",
             blind_score: int | None = None) -> Audit:
    """The auditor's next item (output 1 first: the explainer said 3) served and answered through the service."""
    served = audits.serve_next_audit(scene.project, auditor)
    assert served is not None
    if clock is not None:
        clock.advance(7.5)
    # "The reasoning is wrong" only where the answer shown gives reasoning (output 2 shows an NLI p: none).
    reasoning_wrong = reasoning_wrong and not audits.reasoning_refusal(served)
    if blind_score is not None:  # given before the reveal, as blind mode does
        audits.give_blind_score(scene.project, auditor, served.item_id, blind_score)
    audit, _ = audits.submit_audit(scene.project, auditor, served.item_id, score=score, agreed=agreed,
                                   reasoning_wrong=reasoning_wrong, note=note)
    return audit


# --------------------------------------------------------------------------- PUT: the whole verdict


def test_a_put_with_only_a_score_is_400_naming_each_missing_field_and_keeps_the_note(scene: AuditScene) -> None:
    audit = answered(scene, scene.auditor)
    before = saved(audit.pk)
    response = send(login(scene.auditor), "put", audit.pk, {"score": 3})
    assert response.status_code == 400, response.content
    errors = response.json()
    assert set(errors) == {"agreed", "reasoning_wrong", "note"}
    for name, messages in errors.items():
        assert messages[0].startswith(f"{name} is required: PUT replaces the whole verdict"), messages
        assert "PATCH" in messages[0] and "nothing was changed" in messages[0]
    assert saved(audit.pk) == before
    assert (Audit.objects.get(pk=audit.pk).note, Audit.objects.get(pk=audit.pk).reasoning_wrong) == ("Date wrong.", True)


def test_an_empty_put_names_all_four_fields(scene: AuditScene) -> None:
    audit = answered(scene, scene.auditor)
    before = saved(audit.pk)
    response = send(login(scene.auditor), "put", audit.pk, {})
    assert response.status_code == 400
    assert set(response.json()) == {"score", "agreed", "reasoning_wrong", "note"}
    assert saved(audit.pk) == before


def test_a_form_put_without_its_boxes_is_missing_them_too(scene: AuditScene) -> None:
    """A form body's missing boolean reads as false in DRF; for a whole verdict it is a missing field."""
    audit = answered(scene, scene.auditor)
    before = saved(audit.pk)
    response = login(scene.auditor).put(f"/api/audits/{audit.pk}/", "score=4&note=fine",
                                        content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400
    assert set(response.json()) == {"agreed", "reasoning_wrong"}
    assert saved(audit.pk) == before


def test_a_whole_put_replaces_every_field(scene: AuditScene, clock: Clock) -> None:
    audit = answered(scene, scene.auditor, clock)
    clock.advance(60)
    body = {"score": 4, "agreed": False, "reasoning_wrong": False, "note": ""}
    response = send(login(scene.auditor), "put", audit.pk, body)
    assert response.status_code == 200, response.content
    stored = Audit.objects.get(pk=audit.pk)
    assert (stored.score, stored.agreed, stored.reasoning_wrong, stored.note) == (4, False, False, "")
    assert (stored.seconds, stored.answered_at, stored.changed_at) == (7.5, audit.answered_at, clock.moment)


def test_a_whole_put_agreeing_sends_a_null_score(scene: AuditScene) -> None:
    audit = answered(scene, scene.auditor, score=5)
    response = send(login(scene.auditor), "put", audit.pk,
                    {"score": None, "agreed": True, "reasoning_wrong": False, "note": "ok"})
    assert response.status_code == 200, response.content
    assert (response.json()["score"], response.json()["agreed"]) == (3, True)  # the explainer's score


# --------------------------------------------------------------------------- PATCH: only what is sent


def test_a_patch_changes_only_the_score_and_keeps_the_rest(scene: AuditScene, clock: Clock) -> None:
    audit = answered(scene, scene.auditor, clock)
    clock.advance(120)
    response = send(login(scene.auditor), "patch", audit.pk, {"score": 4})
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["score"], body["reasoning_wrong"], body["note"], body["agreed"]) == (4, True, "Date wrong.", False)
    stored = Audit.objects.get(pk=audit.pk)
    assert (stored.score, stored.reasoning_wrong, stored.note) == (4, True, "Date wrong.")
    assert (stored.seconds, stored.answered_at, stored.changed_at) == (7.5, audit.answered_at, clock.moment)
    assert Audit.objects.filter(auditor=scene.auditor).count() == 1


def test_a_patch_of_the_note_alone_keeps_the_score(scene: AuditScene) -> None:
    audit = answered(scene, scene.auditor)
    response = send(login(scene.auditor), "patch", audit.pk, {"note": "  The date is right after all. "})
    assert response.status_code == 200
    stored = Audit.objects.get(pk=audit.pk)
    assert (stored.score, stored.reasoning_wrong, stored.note) == (2, True, "The date is right after all.")


def test_patching_agreed_takes_the_shown_judges_score(scene: AuditScene) -> None:
    audit = answered(scene, scene.auditor, score=5)
    response = send(login(scene.auditor), "patch", audit.pk, {"agreed": True})
    assert response.status_code == 200
    assert (response.json()["score"], response.json()["agreed"]) == (3, True)
    assert Audit.objects.get(pk=audit.pk).note == "Date wrong."


def test_a_new_score_beside_a_saved_agreement_is_400_until_agreed_is_false(scene: AuditScene) -> None:
    audit = answered(scene, scene.auditor, score=None, agreed=True)
    assert audit.score == 3
    before = saved(audit.pk)
    client = login(scene.auditor)
    refused = send(client, "patch", audit.pk, {"score": 5})
    assert refused.status_code == 400
    assert '"agreed": false' in refused.json()["score"][0] and "score 3" in refused.json()["score"][0]
    assert saved(audit.pk) == before
    assert send(client, "patch", audit.pk, {"score": 3}).json()["changed_at"] is None  # the same score: agreed stays
    changed = send(client, "patch", audit.pk, {"score": 5, "agreed": False})
    assert changed.status_code == 200
    assert (changed.json()["score"], changed.json()["agreed"]) == (5, False)


def test_a_patch_that_changes_nothing_writes_nothing(scene: AuditScene, clock: Clock) -> None:
    audit = answered(scene, scene.auditor)
    before = saved(audit.pk)
    clock.advance(30)
    client = login(scene.auditor)
    for body in ({}, {"score": 2}, {"note": "Date wrong.", "reasoning_wrong": True}):
        response = send(client, "patch", audit.pk, body)
        assert response.status_code == 200 and response.json()["changed_at"] is None, body
    assert saved(audit.pk) == before


def test_a_patch_keeps_the_blind_score_and_blind_follows_the_final_score(scene: AuditScene) -> None:
    audit = answered(scene, scene.auditor, score=4, blind_score=4)
    assert (audit.blind, audit.blind_score) == (True, 4)
    client = login(scene.auditor)
    body = send(client, "patch", audit.pk, {"score": 2}).json()
    assert (body["score"], body["blind"], body["blind_score"]) == (2, False, 4)
    body = send(client, "patch", audit.pk, {"score": 4}).json()
    assert (body["score"], body["blind"], body["blind_score"]) == (4, True, 4)


@pytest.mark.parametrize(("body", "field"), [
    ({"score": 9}, "score"),
    ({"score": None}, "score"),  # not agreeing: a score is needed
    ({"note": "x" * (MAX_NOTE + 1)}, "note"),
    ({"reasoning_wrong": "perhaps"}, "reasoning_wrong"),
    ({"stray": 1}, "stray"),
])
def test_a_bad_patch_is_400_naming_the_field_and_changes_nothing(
    scene: AuditScene, body: dict[str, Any], field: str
) -> None:
    audit = answered(scene, scene.auditor)
    before = saved(audit.pk)
    response = send(login(scene.auditor), "patch", audit.pk, body)
    assert response.status_code == 400 and field in response.json(), response.content
    assert saved(audit.pk) == before


def test_patching_agreement_with_an_answer_that_has_no_score_is_409(scene: AuditScene) -> None:
    """Output 2's explanation is a parse error: its first pass (an NLI p) is shown, with no 1-5 score to take."""
    client = login(scene.auditor)
    for _ in range(3):
        last = answered(scene, scene.auditor)
    assert last.item.sample == scene.samples[2]
    before = saved(last.pk)
    response = send(client, "patch", last.pk, {"agreed": True})
    assert response.status_code == 409 and response.json()["code"] == "nothing_to_agree"
    assert saved(last.pk) == before


# --------------------------------------------------------------------------- GET: read before writing


def test_an_auditor_reads_their_saved_verdict_as_a_change_answers_it(scene: AuditScene) -> None:
    audit = answered(scene, scene.auditor)
    client = login(scene.auditor)
    read = send(client, "get", audit.pk)
    assert read.status_code == 200
    body = read.json()
    assert (body["id"], body["item"], body["score"], body["note"], body["reasoning_wrong"]) == (
        audit.pk, audit.item_id, 2, "Date wrong.", True
    )
    assert body == send(client, "patch", audit.pk, {}).json()  # the same shape as a change answers


def test_reading_an_audit_not_answered_yet_is_409_and_an_unknown_one_404(scene: AuditScene) -> None:
    served = audits.serve_next_audit(scene.project, scene.auditor)
    assert served is not None
    client = login(scene.auditor)
    response = send(client, "get", served.pk)
    assert response.status_code == 409 and response.json()["code"] == "not_answered"
    assert send(client, "get", 10**17).status_code == 404


# --------------------------------------------------------------------------- anyone else's


@pytest.mark.parametrize(("method", "body"), [("get", None), ("patch", {"score": 5}), ("patch", {"score": 9}),
                                              ("patch", {}), ("put", {"score": 5})])
def test_another_auditor_and_an_admin_get_403_and_change_nothing(
    scene: AuditScene, admin_user: Any, method: str, body: Any
) -> None:
    audit = answered(scene, scene.auditor)
    before = saved(audit.pk)
    for someone in (make_auditor(scene.project, "hedy"), admin_user):
        response = send(login(someone), method, audit.pk, body)
        assert response.status_code == 403, (someone, response.content)
        assert "another auditor's verdict" in response.json()["detail"]
    assert saved(audit.pk) == before


@pytest.mark.parametrize(("method", "body"), [("get", None), ("patch", {"score": 5}), ("patch", {"stray": 1})])
def test_an_annotator_gets_403_an_outsider_404_and_the_anonymous_401(
    scene: AuditScene, alice: Any, charlie: Any, method: str, body: Any
) -> None:
    audit = answered(scene, scene.auditor)
    before = saved(audit.pk)
    assert send(login(alice), method, audit.pk, body).status_code == 403
    outsider = send(login(charlie), method, audit.pk, body)
    assert outsider.status_code == 404
    assert outsider.json() == send(login(charlie), method, 10**17, body).json()  # as for no audit at all
    assert send(Client(), method, audit.pk, body).status_code == 401
    assert saved(audit.pk) == before


# --------------------------------------------------------------------------- the schema


def test_the_schema_requires_every_field_of_a_put_and_none_of_a_patch(admin_user: Any) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operations = document["paths"]["/api/audits/{id}/"]
    assert {"get", "put", "patch"} <= set(operations)
    schemas = document["components"]["schemas"]

    def request_schema(method: str) -> dict[str, Any]:
        reference = operations[method]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        return schemas[reference.rsplit("/", 1)[-1]]

    put, patch = request_schema("put"), request_schema("patch")
    assert set(put["required"]) == {"score", "agreed", "reasoning_wrong", "note"}
    # base_changed_at, the version the change is made from, is optional (test_audit_stale_change.py).
    assert set(put["properties"]) == {"score", "agreed", "reasoning_wrong", "note", "base_changed_at"}
    assert "required" not in patch and set(patch["properties"]) == set(put["properties"])
    assert put["properties"]["score"]["nullable"] is True
    for method in ("get", "put", "patch"):
        assert {"200", "401", "403", "404", "409"} <= set(operations[method]["responses"]), method
    assert "400" in operations["put"]["responses"] and "400" in operations["patch"]["responses"]
    assert "PATCH" in operations["put"]["description"]
