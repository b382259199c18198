"""Changing a saved verdict: PUT /api/audits/<id>/ and the audit page's answered view (its ``u``).

An auditor changes their own answered audit, never another's: another auditor (or an admin) 403, an annotator 403,
an outsider 404, each before the body is read (a malformed body gets the same answer as a valid one), and nothing
changes. A change keeps the first answer's answered_at and seconds, sets changed_at, keeps blind_score, and makes
``blind`` again whether the final score is the one given blind; one row per item and auditor, always."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Batch, Project
from judging.models import Audit
from judging.services import audits
from tests.conftest import login
from tests.judging import audit_helpers
from tests.judging.audit_helpers import HTMX, AuditScene, Clock, build_scene, make_auditor, read_html

scene = audit_helpers.scene
clock = audit_helpers.clock

pytestmark = pytest.mark.django_db

VERDICT_FIELDS = ("score", "agreed", "reasoning_wrong", "note", "blind", "blind_score", "answered_at", "seconds",
                  "changed_at")


def change(client: Client, audit_id: int, body: Any) -> Any:
    return client.put(f"/api/audits/{audit_id}/", json.dumps(body), content_type="application/json")


def whole(**fields: Any) -> dict[str, Any]:
    """A whole verdict for PUT (it replaces every field): the given fields over an own score-free, note-free one."""
    return {"score": None, "agreed": False, "reasoning_wrong": False, "note": "", **fields}


def verdict_of(audit_id: int) -> tuple[Any, ...]:
    audit = Audit.objects.get(pk=audit_id)
    return tuple(getattr(audit, name) for name in VERDICT_FIELDS)


def answered(scene: AuditScene, auditor: Any, score: int, blind_score: int | None = None) -> Audit:
    """The auditor's next item served and answered with ``score`` through the service (``blind_score`` given
    before, as blind mode's reveal does)."""
    served = audits.serve_next_audit(scene.project, auditor)
    assert served is not None
    if blind_score is not None:
        audits.give_blind_score(scene.project, auditor, served.item_id, blind_score)
    audit, _ = audits.submit_audit(
        scene.project, auditor, served.item_id, score=score, agreed=False, reasoning_wrong=False, note=""
    )
    return audit


# --------------------------------------------------------------------------- the API: one's own verdict


def test_an_auditor_changes_their_own_verdict_keeping_the_first_answers_time(scene: AuditScene, clock: Clock) -> None:
    served = audits.serve_next_audit(scene.project, scene.auditor)
    assert served is not None
    clock.advance(12.5)
    audit, _ = audits.submit_audit(scene.project, scene.auditor, served.item_id, score=2, agreed=False,
                                   reasoning_wrong=False, note="")
    first_answer = audit.answered_at
    clock.advance(300)
    response = change(login(scene.auditor), audit.pk, whole(score=4, reasoning_wrong=True, note=" Date is fine. "))
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["id"], body["score"], body["reasoning_wrong"], body["note"]) == (audit.pk, 4, True, "Date is fine.")
    assert (body["seconds"], body["answered_at"]) == (12.5, "2026-03-02T09:00:12.500000Z")
    assert body["changed_at"] == "2026-03-02T09:05:12.500000Z"
    stored = Audit.objects.get(item=audit.item, auditor=scene.auditor)  # still the one row
    assert (stored.pk, stored.score, stored.seconds, stored.answered_at) == (audit.pk, 4, 12.5, first_answer)
    assert Audit.objects.filter(auditor=scene.auditor).count() == 1


def test_agreeing_in_a_change_takes_the_score_of_the_judge_shown_at_the_first_answer(scene: AuditScene) -> None:
    audit = answered(scene, scene.auditor, 5)  # output 1, where the explainer said 3
    response = change(login(scene.auditor), audit.pk, whole(agreed=True))
    assert response.status_code == 200
    assert (response.json()["score"], response.json()["agreed"]) == (3, True)


def test_a_change_that_changes_nothing_writes_nothing(scene: AuditScene, clock: Clock) -> None:
    audit = answered(scene, scene.auditor, 2)
    before = verdict_of(audit.pk)
    clock.advance(60)
    response = change(login(scene.auditor), audit.pk, whole(score=2))
    assert response.status_code == 200 and response.json()["changed_at"] is None
    assert verdict_of(audit.pk) == before


def test_a_change_keeps_the_blind_score_and_blind_says_whether_the_final_score_is_it(scene: AuditScene) -> None:
    audit = answered(scene, scene.auditor, 4, blind_score=4)
    assert (audit.blind, audit.blind_score) == (True, 4)
    client = login(scene.auditor)
    body = change(client, audit.pk, whole(score=2)).json()
    assert (body["score"], body["blind"], body["blind_score"]) == (2, False, 4)
    body = change(client, audit.pk, whole(score=4)).json()
    assert (body["score"], body["blind"], body["blind_score"]) == (4, True, 4)


def test_a_bad_change_is_400_and_changes_nothing(scene: AuditScene) -> None:
    audit = answered(scene, scene.auditor, 2)
    before = verdict_of(audit.pk)
    response = change(login(scene.auditor), audit.pk, {"score": 7, "note": "x"})
    assert response.status_code == 400 and "score" in response.json()
    assert verdict_of(audit.pk) == before


def test_an_audit_served_but_not_answered_has_nothing_to_change(scene: AuditScene) -> None:
    served = audits.serve_next_audit(scene.project, scene.auditor)
    assert served is not None
    response = change(login(scene.auditor), served.pk, whole(score=3))
    assert response.status_code == 409 and response.json()["code"] == "not_answered"
    assert Audit.objects.get(pk=served.pk).answered_at is None


# --------------------------------------------------------------------------- the API: anyone else's


@pytest.fixture
def graces_audit(scene: AuditScene) -> Audit:
    return answered(scene, scene.auditor, 2)


@pytest.mark.parametrize("body", [{"score": 5}, {"score": 9}, {"stray": True}, {}])
def test_another_auditor_gets_403_for_any_body_and_changes_nothing(
    scene: AuditScene, graces_audit: Audit, body: dict[str, Any]
) -> None:
    hedy = make_auditor(scene.project, "hedy")
    before = verdict_of(graces_audit.pk)
    response = change(login(hedy), graces_audit.pk, body)
    assert response.status_code == 403, response.content
    assert response.json()["detail"] == f"audit {graces_audit.pk} is another auditor's verdict: you may change only your own"
    assert verdict_of(graces_audit.pk) == before


def test_an_admin_may_not_change_an_auditors_verdict_either(scene: AuditScene, graces_audit: Audit, admin_user: Any) -> None:
    before = verdict_of(graces_audit.pk)
    response = change(login(admin_user), graces_audit.pk, {"score": 5})
    assert response.status_code == 403 and "another auditor's verdict" in response.json()["detail"]
    assert verdict_of(graces_audit.pk) == before


@pytest.mark.parametrize("body", [{"score": 5}, {"score": "bad"}, {"stray": 1}])
def test_an_annotator_gets_403_and_an_outsider_404_for_any_body(
    graces_audit: Audit, alice: Any, charlie: Any, body: dict[str, Any]
) -> None:
    before = verdict_of(graces_audit.pk)
    assert change(login(alice), graces_audit.pk, body).status_code == 403
    outsider = change(login(charlie), graces_audit.pk, body)
    assert outsider.status_code == 404
    assert outsider.json() == change(login(charlie), 10**17, body).json()  # the same words as for no audit at all
    assert verdict_of(graces_audit.pk) == before


def test_an_anonymous_change_is_401(graces_audit: Audit) -> None:
    assert change(Client(), graces_audit.pk, {"score": 5}).status_code == 401
    assert Audit.objects.get(pk=graces_audit.pk).score == 2


def test_a_second_post_still_answers_409_naming_the_way_to_change(scene: AuditScene) -> None:
    audit = answered(scene, scene.auditor, 2)
    response = login(scene.auditor).post(
        f"/api/audit-items/{audit.item_id}/audits/", {"score": 5}, content_type="application/json"
    )
    assert response.status_code == 409 and f"PUT /api/audits/{audit.pk}/" in response.json()["detail"]
    assert Audit.objects.get(pk=audit.pk).score == 2


# --------------------------------------------------------------------------- the page's answered view


def answered_url(project: Project, audit: Audit | int) -> str:
    return reverse("judging-audit-answered", args=[project.slug, audit if isinstance(audit, int) else audit.pk])


def test_the_answered_view_shows_the_saved_verdict_with_the_judges(scene: AuditScene) -> None:
    served = audits.serve_next_audit(scene.project, scene.auditor)
    assert served is not None
    audit, _ = audits.submit_audit(scene.project, scene.auditor, served.item_id, score=3, agreed=True,
                                   reasoning_wrong=True, note="Vague.")
    response = login(scene.auditor).get(answered_url(scene.project, audit), **HTMX)
    assert response.status_code == 200
    view = read_html(response.content).one(id="audit-view")
    assert (view.attrs["data-state"], view.attrs["data-audit-id"]) == ("change", str(audit.pk))
    assert view.attrs["data-item-id"] == str(audit.item_id)
    form = view.one("form", data_role="audit-form")
    assert form.attrs["action"] == answered_url(scene.project, audit)
    assert form.one("input", data_role="score-input").attrs["value"] == "3"
    assert form.one("input", data_role="agreed-input").attrs["value"] == "1"
    assert "checked" in form.one("input", data_role="reasoning-wrong").attrs
    assert form.one("textarea", data_role="note").text == "Vague."
    assert view.find(data_role="judge-score")  # the judges are shown: they were before the verdict was saved
    assert "Changing your saved verdict" in view.one(data_role="change-banner").text


def test_saving_a_change_on_the_page_answers_with_the_current_item_and_says_changed(
    scene: AuditScene, clock: Clock
) -> None:
    client = login(scene.auditor)
    first, second, _ = scene.queue_order
    client.get(reverse("judging-audit", args=[scene.project.slug]))
    clock.advance(8)
    client.post(reverse("judging-audit-submit", args=[scene.project.slug, first.pk]), {"score": "2"}, **HTMX)
    audit = Audit.objects.get(item=first, auditor=scene.auditor)
    clock.advance(100)
    response = client.post(answered_url(scene.project, audit), {"score": "5", "note": "on second thought"}, **HTMX)
    assert response.status_code == 200
    view = read_html(response.content).one(id="audit-view")
    assert view.attrs["data-item-id"] == str(second.pk)  # back to the item being served
    line = view.one(data_role="last-saved")
    assert " ".join(line.text.split()) == "Changed: score 5, first answer 8.0 s · u to change it"
    assert line.attrs["data-audit-id"] == str(audit.pk)
    changed = Audit.objects.get(item=first, auditor=scene.auditor)
    assert (changed.score, changed.note, changed.seconds) == (5, "on second thought", 8.0)
    assert Audit.objects.filter(item=first).count() == 1


def test_the_page_refuses_another_auditors_audit_and_one_not_answered(project: Project, batch: Batch) -> None:
    scene = build_scene(project, batch)
    graces = answered(scene, scene.auditor, 2)
    hedy = make_auditor(project, "hedy")
    client = login(hedy)
    assert client.get(answered_url(project, graces), **HTMX).status_code == 403
    assert client.post(answered_url(project, graces), {"score": "5"}, **HTMX).status_code == 403
    assert client.post(answered_url(project, graces), {"score": "9"}, **HTMX).status_code == 403
    assert Audit.objects.get(pk=graces.pk).score == 2
    held = audits.serve_next_audit(project, hedy)
    assert held is not None
    refused = client.post(answered_url(project, held), {"score": "4"}, **HTMX)
    assert refused.status_code == 409
    assert "holds no verdict yet" in read_html(refused.content).one(data_role="error").text
    assert Audit.objects.get(pk=held.pk).answered_at is None
    assert client.get(answered_url(project, 10**17), **HTMX).status_code == 404
