"""The score given in blind mode before the judges' answers are shown is kept in the database (BlindScore), not in the
login session: a session that ends between the reveal and the save (the auditor logs in again) still saves a blind
verdict with that score, the page after the new login knows it was given blind, and a verdict sent by the API takes
it too. One row per auditor and item, written once: another auditor's is never used, and a second score before a
reveal leaves the first. A session from before (its ``pending`` scores) is read once into the table."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Batch, Project
from judging.models import Audit, BlindScore
from judging.services import audits
from judging.services.audits import AuditError
from judging.views.audit.session import AuditSession
from tests.conftest import login
from tests.judging.audit_helpers import HTMX, AuditScene, Clock, Element, build_scene, make_auditor, read_html
from tests.judging.audit_helpers import clock as clock  # noqa: F401, PLC0414 (a fixture)

pytestmark = pytest.mark.django_db


def page_url(project: Project) -> str:
    return reverse("judging-audit", args=[project.slug])


def reveal_url(project: Project, item_id: int) -> str:
    return reverse("judging-audit-reveal", args=[project.slug, item_id])


def submit_url(project: Project, item_id: int) -> str:
    return reverse("judging-audit-submit", args=[project.slug, item_id])


def view_of(response: Any) -> Element:
    return read_html(response.content).one(id="audit-view")


def logged_in_again(client: Client, user: Any) -> Client:
    """The login session ends (its data flushed) and the auditor logs in again."""
    client.logout()
    client.force_login(user)
    return client


def verdict(scene: AuditScene, item: Any, auditor: Any = None) -> Audit:
    return Audit.objects.get(item=item, auditor=auditor or scene.auditor)


@pytest.fixture
def blind_scene(project: Project, batch: Batch) -> AuditScene:
    return build_scene(project, batch, blind=True, audits_per_item=2)


def test_a_verdict_saved_after_a_new_login_still_counts_as_blind_with_the_score_given_blind(
    blind_scene: AuditScene, clock: Clock
) -> None:
    scene, item = blind_scene, blind_scene.queue_order[0]
    client = login(scene.auditor)
    assert view_of(client.get(page_url(scene.project))).attrs["data-state"] == "blind"
    clock.advance(20)
    assert client.post(reveal_url(scene.project, item.pk), {"score": "2"}, **HTMX).status_code == 200
    kept = BlindScore.objects.get(item=item, auditor=scene.auditor)
    assert (kept.score, kept.given_at) == (2, clock.moment)

    logged_in_again(client, scene.auditor)
    # The page knows the score was given blind: the judges stay shown, the score stands chosen, said so.
    view = view_of(client.get(page_url(scene.project)))
    assert (int(view.attrs["data-item-id"]), view.attrs["data-state"]) == (item.pk, "open")
    assert view.one(data_role="blind-score").text == "(given blind: 2)"
    assert view.one("input", data_role="score-input").attrs["value"] == "2"

    saved = client.post(submit_url(scene.project, item.pk), {"score": "2"}, **HTMX)
    assert saved.status_code == 200
    audit = verdict(scene, item)
    assert (audit.score, audit.blind_score, audit.blind) == (2, 2, True)
    assert "given blind" in read_html(saved.content).one(data_role="last-saved").text


def test_a_score_changed_after_the_new_login_keeps_the_blind_one_and_is_not_blind(blind_scene: AuditScene) -> None:
    scene, item = blind_scene, blind_scene.queue_order[0]
    client = login(scene.auditor)
    client.get(page_url(scene.project))
    client.post(reveal_url(scene.project, item.pk), {"score": "4"}, **HTMX)
    logged_in_again(client, scene.auditor)
    client.post(submit_url(scene.project, item.pk), {"score": "1"}, **HTMX)
    audit = verdict(scene, item)
    assert (audit.score, audit.blind_score, audit.blind) == (1, 4, False)


def test_a_verdict_sent_by_the_api_takes_the_score_given_blind_on_the_page(blind_scene: AuditScene) -> None:
    scene, item = blind_scene, blind_scene.queue_order[0]
    page = login(scene.auditor)
    page.get(page_url(scene.project))
    page.post(reveal_url(scene.project, item.pk), {"score": "3"}, **HTMX)

    api = login(scene.auditor)  # another session: a script, another browser
    answer = api.post(f"/api/audit-items/{item.pk}/audits/", {"agreed": True}, content_type="application/json")
    assert answer.status_code == 201, answer.json()
    body = answer.json()
    assert (body["score"], body["agreed"], body["blind_score"], body["blind"]) == (3, True, 3, True)
    # Sent again (a retry): the saved verdict, blind as it was.
    again = api.post(f"/api/audit-items/{item.pk}/audits/", {"agreed": True}, content_type="application/json")
    assert again.status_code == 200 and again.json() == body


def test_another_auditors_blind_score_is_never_used(blind_scene: AuditScene) -> None:
    scene, item = blind_scene, blind_scene.queue_order[0]
    hedy = make_auditor(scene.project, "hedy")
    grace_client, hedy_client = login(scene.auditor), login(hedy)
    grace_client.get(page_url(scene.project))
    grace_client.post(reveal_url(scene.project, item.pk), {"score": "3"}, **HTMX)

    # hedy gets the same output (two auditors per output): still hidden from her, with no score of hers.
    view = view_of(hedy_client.get(page_url(scene.project)))
    assert (int(view.attrs["data-item-id"]), view.attrs["data-state"]) == (item.pk, "blind")
    assert view.find(data_role="blind-score") == []
    # Her verdict by the API (no blind mode there), with the very score grace gave blind: not blind.
    answer = hedy_client.post(f"/api/audit-items/{item.pk}/audits/", {"score": 3}, content_type="application/json")
    assert answer.status_code == 201
    assert (answer.json()["blind_score"], answer.json()["blind"]) == (None, False)
    # And grace's verdict is still hers.
    grace_client.post(submit_url(scene.project, item.pk), {"score": "3"}, **HTMX)
    assert (verdict(scene, item).blind_score, verdict(scene, item).blind) == (3, True)
    assert BlindScore.objects.filter(item=item).count() == 1


def test_a_second_score_before_a_reveal_leaves_the_first_and_the_page_says_so(blind_scene: AuditScene) -> None:
    scene, item = blind_scene, blind_scene.queue_order[0]
    first_tab = login(scene.auditor)
    first_tab.get(page_url(scene.project))
    other_tab = login(scene.auditor)  # a second tab of another session, the item still hidden there
    assert view_of(other_tab.get(page_url(scene.project))).attrs["data-state"] == "blind"
    first_tab.post(reveal_url(scene.project, item.pk), {"score": "2"}, **HTMX)

    late = other_tab.post(reveal_url(scene.project, item.pk), {"score": "5"}, **HTMX)
    assert late.status_code == 200
    view = view_of(late)
    assert view.one(data_role="notice").text == (
        "Your blind score for this output was given already (2) and stays; your score 5 is chosen below."
    )
    assert view.one("input", data_role="score-input").attrs["value"] == "5"
    assert list(BlindScore.objects.values_list("score", flat=True)) == [2]
    other_tab.post(submit_url(scene.project, item.pk), {"score": "5"}, **HTMX)
    audit = verdict(scene, item)
    assert (audit.score, audit.blind_score, audit.blind) == (5, 2, False)


def test_giving_a_blind_score_is_refused_off_the_served_item_and_for_others(blind_scene: AuditScene) -> None:
    scene = blind_scene
    held = audits.serve_next_audit(scene.project, scene.auditor)
    other = scene.queue_order[1]
    for score, status in (("4", 400), (0, 400), (True, 400)):
        with pytest.raises(AuditError) as refused:
            audits.give_blind_score(scene.project, scene.auditor, held.item_id, score)
        assert (refused.value.status, refused.value.field) == (status, "score")
    with pytest.raises(AuditError) as refused:
        audits.give_blind_score(scene.project, scene.auditor, other.pk, 4)
    assert (refused.value.status, refused.value.code) == (409, "not_served")
    with pytest.raises(AuditError) as refused:
        audits.give_blind_score(scene.project, make_auditor(Project.objects.create(name="O", slug="o"), "olga"),
                                held.item_id, 4)
    assert refused.value.status == 403
    audits.submit_audit(scene.project, scene.auditor, held.item_id, score=4, agreed=False, reasoning_wrong=False,
                        note="")
    with pytest.raises(AuditError) as refused:  # answered: a blind score comes before the verdict
        audits.give_blind_score(scene.project, scene.auditor, held.item_id, 4)
    assert refused.value.status == 409
    assert not BlindScore.objects.exists()


def test_a_score_a_session_from_before_kept_is_read_once_into_the_database(blind_scene: AuditScene) -> None:
    scene, item = blind_scene, blind_scene.queue_order[0]
    client = login(scene.auditor)
    client.get(page_url(scene.project))
    # What the page kept in the session before blind scores were kept in the database.
    session = client.session
    session[AuditSession.key(scene.project)] = {"blind": None, "pending": {str(item.pk): 4, "999999": 2},
                                                "revealed": [item.pk]}
    session.save()

    view = view_of(client.get(page_url(scene.project)))
    assert (view.attrs["data-state"], view.one(data_role="blind-score").text) == ("open", "(given blind: 4)")
    assert list(BlindScore.objects.values_list("item_id", "score")) == [(item.pk, 4)]
    assert "pending" not in client.session[AuditSession.key(scene.project)]
    client.post(submit_url(scene.project, item.pk), {"score": "4"}, **HTMX)
    audit = verdict(scene, item)
    assert (audit.blind_score, audit.blind) == (4, True)
