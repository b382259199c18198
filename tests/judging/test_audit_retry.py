"""A retried verdict (POST /api/audit-items/<id>/audits/, and the page's submit): the same verdict sent again by the
same auditor is 200 with the saved one and changes nothing, its clock included; another verdict is still 409
already_audited."""

from __future__ import annotations

from typing import Any

import pytest
from django.forms.models import model_to_dict
from django.test import Client

from judging.models import Audit
from tests.conftest import login
from tests.judging import audit_helpers
from tests.judging.audit_helpers import AuditScene, Clock

scene = audit_helpers.scene
clock = audit_helpers.clock

pytestmark = pytest.mark.django_db


def post(client: Client, item_id: int, body: dict[str, Any]) -> Any:
    return client.post(f"/api/audit-items/{item_id}/audits/", body, content_type="application/json")


def first_item(client: Client, scene: AuditScene) -> int:
    return client.get(f"/api/projects/{scene.project.slug}/audit/next/").json()["item"]


def saved(item_id: int) -> dict[str, Any]:
    return model_to_dict(Audit.objects.get(item_id=item_id))


@pytest.mark.parametrize(
    "verdict",
    [
        {"score": 4, "agreed": False, "reasoning_wrong": True, "note": "Date is fine."},
        {"score": 2},
        {"agreed": True},  # the shown judge's score, 3
        {"agreed": True, "score": 3, "note": "As the judge says."},
    ],
)
def test_the_same_verdict_again_is_200_with_the_saved_one_and_changes_nothing(
    scene: AuditScene, clock: Clock, verdict: dict[str, Any]
) -> None:
    client = login(scene.auditor)
    item = first_item(client, scene)
    clock.advance(7.25)
    first = post(client, item, verdict)
    assert first.status_code == 201
    before = saved(item)

    clock.advance(120)  # a retry after the network came back: no clock may move
    retried = post(client, item, verdict)

    assert retried.status_code == 200, retried.json()
    assert retried.json() == first.json()
    assert retried.json()["seconds"] == 7.25 and retried.json()["changed_at"] is None
    assert saved(item) == before
    assert Audit.objects.count() == 1


@pytest.mark.parametrize(
    "other",
    [
        {"score": 5, "agreed": False, "reasoning_wrong": True, "note": "Date is fine."},
        {"score": 4, "agreed": False, "reasoning_wrong": False, "note": "Date is fine."},
        {"score": 4, "agreed": False, "reasoning_wrong": True, "note": "Another note."},
        {"agreed": True},  # the judge's 3, not the 4 given
    ],
)
def test_another_verdict_is_still_409_and_changes_nothing(
    scene: AuditScene, clock: Clock, other: dict[str, Any]
) -> None:
    client = login(scene.auditor)
    item = first_item(client, scene)
    assert post(client, item, {"score": 4, "agreed": False, "reasoning_wrong": True, "note": "Date is fine."}
                ).status_code == 201
    before = saved(item)
    clock.advance(30)

    refused = post(client, item, other)

    assert refused.status_code == 409
    assert refused.json()["code"] == "already_audited"
    assert saved(item) == before


def test_a_retry_of_a_verdict_changed_since_is_409_and_keeps_the_change(scene: AuditScene, clock: Clock) -> None:
    """The first POST's retry arrives after a PUT changed the verdict: it must not bring the old verdict back."""
    client = login(scene.auditor)
    item = first_item(client, scene)
    assert post(client, item, {"score": 2}).status_code == 201
    audit = Audit.objects.get(item_id=item)
    clock.advance(10)
    changed = client.put(f"/api/audits/{audit.pk}/", {"score": 4, "agreed": False, "reasoning_wrong": False,
                                                       "note": ""}, content_type="application/json")
    assert changed.status_code == 200
    before = saved(item)

    late = post(client, item, {"score": 2})

    assert late.status_code == 409 and late.json()["code"] == "already_audited"
    assert saved(item) == before and before["score"] == 4


def test_the_same_verdict_from_another_auditor_is_not_a_retry_of_it(scene: AuditScene) -> None:
    hedy = audit_helpers.make_auditor(scene.project, "hedy")
    mine = login(scene.auditor)
    item = first_item(mine, scene)
    assert post(mine, item, {"score": 2}).status_code == 201
    theirs = post(login(hedy), item, {"score": 2})
    assert theirs.status_code == 409 and theirs.json()["code"] == "not_served"
    assert Audit.objects.filter(auditor=hedy).count() == 0


def test_the_page_takes_the_same_verdict_sent_again_for_a_retry_too(scene: AuditScene, clock: Clock) -> None:
    """The page's Enter after a network error that lost the answer: one entry point (audits.submit_audit) answers
    the page as the API, with the saved verdict and the next item, not 409 "you audited this item already"."""
    client = login(scene.auditor)
    page_url = f"/projects/{scene.project.slug}/audit/"
    first = audit_helpers.read_html(client.get(page_url).content).one(id="audit-view").attrs["data-item-id"]
    submit = f"/projects/{scene.project.slug}/audit/{first}/submit/"
    clock.advance(5)
    assert client.post(submit, {"score": "4", "note": "Dates."}, **audit_helpers.HTMX).status_code == 200
    before = saved(int(first))
    clock.advance(60)

    again = client.post(submit, {"score": "4", "note": "Dates."}, **audit_helpers.HTMX)

    assert again.status_code == 200
    view = audit_helpers.read_html(again.content)
    assert view.one(id="audit-view").attrs["data-item-id"] != first
    assert view.one(data_role="last-saved").text.startswith("Saved: score 4")
    assert saved(int(first)) == before and before["seconds"] == 5
    other = client.post(submit, {"score": "2"}, **audit_helpers.HTMX)  # another verdict: still refused
    assert other.status_code == 409 and saved(int(first)) == before


def test_the_schema_describes_the_retry(client: Client, admin_user: Any) -> None:
    client.force_login(admin_user)
    paths = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["paths"]
    responses = paths["/api/audit-items/{id}/audits/"]["post"]["responses"]
    retry = responses["200"]
    assert retry["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/AuditResult"}
    assert "retry" in retry["description"].lower() and "Nothing was changed" in retry["description"]
    assert "another verdict" in responses["409"]["description"]
