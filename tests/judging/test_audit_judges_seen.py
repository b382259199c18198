"""Once an output's judges' answers were shown to an auditor, no later score of theirs counts as blind (JudgesShown,
kept in the database): not after a new login, which used to hide the answers again and take a "blind" score given
after seeing them, and not after the API's queue, which always shows them. A blind score given before they were shown
stays blind."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotate.models import Batch, Project
from judging.models import Audit, BlindScore, JudgesShown
from tests.conftest import login
from tests.judging.audit_helpers import HTMX, AuditScene, build_scene, make_auditor, read_html
from tests.judging.test_audit_blind_score_kept import logged_in_again, page_url, reveal_url, submit_url, view_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def blind_scene(project: Project, batch: Batch) -> AuditScene:
    return build_scene(project, batch, blind=True, audits_per_item=2)


def test_judges_seen_with_blind_mode_off_stay_seen_after_a_new_login_and_no_blind_score_is_taken(
    blind_scene: AuditScene,
) -> None:
    scene, item = blind_scene, blind_scene.queue_order[0]
    client = login(scene.auditor)
    assert view_of(client.get(page_url(scene.project))).attrs["data-state"] == "blind"
    switched = client.post(reverse("judging-audit-blind", args=[scene.project.slug]), {"blind": ""}, **HTMX)
    assert view_of(switched).attrs["data-state"] == "open"  # the judges' answers are on the page now
    assert JudgesShown.objects.filter(item=item, auditor=scene.auditor).exists()

    logged_in_again(client, scene.auditor)  # the session forgets the switch: blind by default again
    view = view_of(client.get(page_url(scene.project)))
    assert (int(view.attrs["data-item-id"]), view.attrs["data-state"]) == (item.pk, "open")

    refused = client.post(reveal_url(scene.project, item.pk), {"score": "1"}, **HTMX)
    assert "shown to you before" in refused.content.decode()
    assert not BlindScore.objects.filter(item=item, auditor=scene.auditor).exists()
    assert client.post(submit_url(scene.project, item.pk), {"score": "1"}, **HTMX).status_code == 200
    audit = Audit.objects.get(item=item, auditor=scene.auditor)
    assert (audit.score, audit.blind_score, audit.blind) == (1, None, False)


def test_the_api_queue_shows_the_judges_so_the_page_does_not_hide_them_or_take_a_blind_score(
    blind_scene: AuditScene,
) -> None:
    scene, item = blind_scene, blind_scene.queue_order[0]
    client = login(scene.auditor)
    served = client.get(f"/api/projects/{scene.project.slug}/audit/next/").json()
    assert served["item"] == item.pk and served["judges"]

    view = view_of(client.get(page_url(scene.project)))
    assert view.attrs["data-state"] == "open"
    assert client.post(reveal_url(scene.project, item.pk), {"score": "3"}, **HTMX).status_code == 409
    assert not BlindScore.objects.filter(item=item, auditor=scene.auditor).exists()


def test_a_blind_score_given_before_the_api_showed_the_judges_still_counts_as_blind(blind_scene: AuditScene) -> None:
    scene, item = blind_scene, blind_scene.queue_order[0]
    client = login(scene.auditor)
    client.get(page_url(scene.project))
    assert client.post(reveal_url(scene.project, item.pk), {"score": "4"}, **HTMX).status_code == 200
    client.get(f"/api/projects/{scene.project.slug}/audit/next/")

    answered = client.post(f"/api/audit-items/{item.pk}/audits/", {"score": 4, "agreed": False,
                                                                   "reasoning_wrong": False, "note": ""},
                           content_type="application/json")
    assert answered.status_code == 201, answered.content
    audit = Audit.objects.get(item=item, auditor=scene.auditor)
    assert (audit.blind_score, audit.blind) == (4, True)


def test_another_auditor_seeing_the_judges_does_not_count_for_this_one(project: Project, batch: Batch) -> None:
    scene = build_scene(project, batch, blind=True, audits_per_item=2)
    item = scene.queue_order[0]
    other = login(make_auditor(scene.project, "heidi"))
    assert other.get(f"/api/projects/{scene.project.slug}/audit/next/").json()["item"] == item.pk
    assert JudgesShown.objects.filter(item=item).exclude(auditor=scene.auditor).exists()
    client = login(scene.auditor)
    assert read_html(client.get(page_url(scene.project)).content).one(id="audit-view").attrs["data-state"] == "blind"
