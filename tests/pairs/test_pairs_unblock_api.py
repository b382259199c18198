"""Lifting a judge's block through the API: POST /api/projects/<slug>/flags/<id>/unblock/ (admins)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from annotate.models import BlockedJudge, JudgeFlag, Membership, PairConfig, PairItem, PairJudgement, Project
from annotate.services.pairs import config, queue
from tests.conftest import make_user
from tests.pairs.conftest import make_judges, make_pair_items
from tests.pairs.page_helpers import answer

pytestmark = pytest.mark.django_db


def client_of(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def unblock_url(flag: JudgeFlag, slug: str = "pairs") -> str:
    return f"/api/projects/{slug}/flags/{flag.pk}/unblock/"


def block(flag: JudgeFlag, admin: Any) -> None:
    response = client_of(admin).post(f"/api/projects/pairs/flags/{flag.pk}/block/", {"reason": "3 s an item"},
                                     content_type="application/json")
    assert response.status_code == 200


@pytest.fixture
def decided_by_bob(flagged: JudgeFlag, pairs_project: Project) -> list[PairItem]:
    """bob (flagged too_fast) answered 12 items, H and N in turn; three other judges answer his first two.

    Item 0: bob H, then H, H, N: 3 H to 1 N, consensus H. Item 1: bob N, then N, N, H: consensus N.
    Without bob each has 3 answers of the 4 it needs, so both go back to being judged.
    """
    items = list(PairItem.objects.filter(project=pairs_project).order_by("id"))
    others = make_judges(pairs_project, 3, prefix="steady")
    for judge, first, second in zip(others, "HHN", "NNH", strict=True):
        answer(items[0], judge, first)
        answer(items[1], judge, second)
    queue.recount_items([items[0].pk, items[1].pk], config.get_config(pairs_project))
    return items


def outcome(item: PairItem) -> tuple[str, str, int, int, int]:
    item.refresh_from_db()
    return item.state, item.label, item.votes_h, item.votes_n, item.judges_needed


def test_unblocking_counts_the_judges_answers_again_and_restores_the_consensus(
    decided_by_bob: list[PairItem], flagged: JudgeFlag, admin_user: Any, bob: Any
) -> None:
    first, second = decided_by_bob[0], decided_by_bob[1]
    assert outcome(first) == ("consensus", "H", 3, 1, 4)
    assert outcome(second) == ("consensus", "N", 1, 3, 4)
    block(flagged, admin_user)
    assert outcome(first) == ("open", "", 2, 1, 4)
    assert outcome(second) == ("open", "", 1, 2, 4)
    assert PairItem.objects.filter(state="consensus").count() == 0

    response = client_of(admin_user).post(unblock_url(flagged))

    assert response.status_code == 200
    body = response.json()
    assert body["items_recomputed"] == 12  # every item bob answered
    assert body["flag"]["id"] == flagged.pk and body["flag"]["judge"] == "bob"
    assert body["flag"]["status"] == "dismissed" and body["flag"]["judge_blocked"] is False
    assert body["flag"]["reviewed_by"] == "adam"
    assert outcome(first) == ("consensus", "H", 3, 1, 4)
    assert outcome(second) == ("consensus", "N", 1, 3, 4)
    assert PairItem.objects.filter(state="consensus").count() == 2
    assert not BlockedJudge.objects.filter(judge=bob).exists()
    assert PairJudgement.objects.filter(judge=bob, counted=True).count() == 12
    served = client_of(bob).get("/api/pairs/next/?project=pairs")
    assert served.status_code in (200, 204)  # bob may ask for work again (a blocked judge gets 403)


def test_unblocking_a_judge_who_is_not_blocked_is_409_naming_them_and_changes_nothing(
    decided_by_bob: list[PairItem], flagged: JudgeFlag, admin_user: Any, bob: Any
) -> None:
    before = outcome(decided_by_bob[0])

    response = client_of(admin_user).post(unblock_url(flagged))

    assert response.status_code == 409
    assert response.json() == {"detail": "bob is not blocked in this project"}
    flagged.refresh_from_db()
    assert flagged.status == "open" and flagged.reviewed_by is None
    assert outcome(decided_by_bob[0]) == before
    assert PairJudgement.objects.filter(judge=bob, counted=True).count() == 12


def test_unblocking_twice_is_409_the_second_time(flagged: JudgeFlag, admin_user: Any) -> None:
    block(flagged, admin_user)
    client = client_of(admin_user)
    assert client.post(unblock_url(flagged)).status_code == 200
    again = client.post(unblock_url(flagged))
    assert again.status_code == 409 and "bob is not blocked" in again.json()["detail"]
    assert JudgeFlag.objects.get(pk=flagged.pk).status == "dismissed"


def test_only_admins_unblock_others_get_403_and_the_block_stays(
    flagged: JudgeFlag, pairs_project: Project, admin_user: Any, alice: Any, bob: Any
) -> None:
    block(flagged, admin_user)
    auditor = make_user("audrey")
    Membership.objects.create(project=pairs_project, user=auditor, role=Membership.Role.AUDITOR)
    for user in (alice, auditor):
        refused = client_of(user).post(unblock_url(flagged))
        assert refused.status_code == 403
    assert BlockedJudge.objects.filter(judge=bob).exists()
    assert not PairJudgement.objects.filter(judge=bob, counted=True).exists()


def test_another_projects_flag_and_outsiders_get_404_and_anonymous_401(
    flagged: JudgeFlag, admin_user: Any, charlie: Any, bob: Any
) -> None:
    block(flagged, admin_user)
    elsewhere = Project.objects.create(name="Other pairs", slug="other-pairs", kind=Project.Kind.PAIRS)
    PairConfig.objects.create(project=elsewhere)
    Membership.objects.create(project=elsewhere, user=admin_user, role=Membership.Role.ADMIN)
    make_pair_items(elsewhere, 1)
    their_flag = JudgeFlag.objects.create(project=elsewhere, judge=charlie, rule=JudgeFlag.Rule.TOO_FAST, figures={})

    admin = client_of(admin_user)
    assert admin.post(unblock_url(their_flag)).status_code == 404  # a flag of another project, through this one
    assert admin.post(unblock_url(flagged, "other-pairs")).status_code == 404
    assert admin.post("/api/projects/pairs/flags/99999999/unblock/").status_code == 404
    assert client_of(charlie).post(unblock_url(flagged)).status_code == 404
    assert Client().post(unblock_url(flagged)).status_code == 401
    assert BlockedJudge.objects.filter(judge=bob).exists()


def test_unblocking_needs_post(flagged: JudgeFlag, admin_user: Any) -> None:
    block(flagged, admin_user)
    assert client_of(admin_user).get(unblock_url(flagged)).status_code == 405
    assert BlockedJudge.objects.exists()


def test_the_schema_describes_unblocking(admin_user: Any) -> None:
    document = client_of(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operation = document["paths"]["/api/projects/{slug}/flags/{id}/unblock/"]["post"]
    assert set(operation["responses"]) == {"200", "400", "401", "403", "404", "409"}  # 400: a field it does not take
    # No fields: an empty object or no body at all (not required), nothing else.
    assert "required" not in operation["requestBody"]
    assert operation["requestBody"]["content"]["application/json"]["schema"]["additionalProperties"] is False
    result = document["components"]["schemas"]["UnblockResult"]
    assert set(result["required"]) == {"flag", "items_recomputed"}
