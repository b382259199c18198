"""A closed round is final: its answers cannot be undone, and an answer to a serve the close left on a screen is
refused (a closed round no longer serves its items; its tallies and reported balance must not move)."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import PairItem, PairJudgement, PairRound, Project
from annotate.services.pairs import queue
from tests.pairs.conftest import make_judges, make_pair_items


def test_undo_of_an_answer_in_a_closed_round_is_refused_and_changes_nothing(
    pairs_project: Project, alice: Any, clock: Any
) -> None:
    item = make_pair_items(pairs_project, 1, round_number=1)[0]
    others = make_judges(pairs_project, 3)
    for judge in [alice, *others]:
        assert queue.serve_next_item(pairs_project, judge).item_id == item.pk
        clock.advance(15)
        queue.record_judgement(pairs_project, judge, item.pk, "H")
    item.refresh_from_db()
    assert item.state == PairItem.State.CONSENSUS and item.label == "H"
    # Alice answered the very first; the last answer was another judge's: undo hers.
    # Now the admin opens round 2, which closes round 1.
    PairRound.objects.filter(project=pairs_project, number=1).update(status=PairRound.Status.CLOSED)

    with pytest.raises(queue.NothingToUndo, match="round 1 is closed"):
        queue.undo_last_judgement(pairs_project, alice)

    item.refresh_from_db()
    assert item.state == PairItem.State.CONSENSUS and item.label == "H" and item.votes_h == 4
    mine = PairJudgement.objects.get(item=item, judge=alice)
    assert mine.label == "H" and mine.answered_at is not None
    # Asking for the next item afterwards loses nothing either.
    assert queue.serve_next_item(pairs_project, alice) is None
    assert PairJudgement.objects.filter(item=item, judge=alice, label="H").exists()


def test_the_undo_api_answers_409_naming_the_closed_round(pairs_project: Project, alice: Any, clock: Any) -> None:
    from django.test import Client

    first, _ = make_pair_items(pairs_project, 2, round_number=1)
    client = Client()
    client.force_login(alice)
    served = client.get("/api/pairs/next/?project=pairs").json()
    assert served["id"] == first.pk
    answered = client.post(f"/api/pairs/{first.pk}/judgements/", {"label": "N"}, content_type="application/json")
    assert answered.status_code == 201
    PairRound.objects.filter(project=pairs_project, number=1).update(status=PairRound.Status.CLOSED)

    response = client.post("/api/pairs/undo/?project=pairs")

    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "nothing_to_undo" and "round 1 is closed" in body["detail"]
    first.refresh_from_db()
    assert first.votes_n == 1 and PairJudgement.objects.get(item=first, judge=alice).label == "N"


def test_an_answer_to_a_serve_of_a_round_closed_meanwhile_is_refused_and_changes_nothing(
    pairs_project: Project, alice: Any, clock: Any
) -> None:
    """Undo calls a closed round's answers final; an answer arriving after the close must not change its tally."""
    item = make_pair_items(pairs_project, 1, round_number=1)[0]
    assert queue.serve_next_item(pairs_project, alice).item_id == item.pk
    # While the item is on alice's screen, the admin creates round 2, which closes round 1.
    PairRound.objects.filter(project=pairs_project, number=1).update(status=PairRound.Status.CLOSED)
    clock.advance(5)

    with pytest.raises(queue.RoundClosed, match="round 1, which was closed"):
        queue.record_judgement(pairs_project, alice, item.pk, "H")
    with pytest.raises(queue.RoundClosed):
        queue.record_and_serve_next(pairs_project, alice, item.pk, "H")

    item.refresh_from_db()
    assert (item.votes_h, item.votes_n, item.votes_unsure, item.state) == (0, 0, 0, PairItem.State.OPEN)
    assert PairJudgement.objects.get(item=item, judge=alice).answered_at is None


def test_the_answer_api_answers_409_round_closed(pairs_project: Project, alice: Any, clock: Any) -> None:
    from django.test import Client

    item = make_pair_items(pairs_project, 1, round_number=1)[0]
    client = Client()
    client.force_login(alice)
    assert client.get("/api/pairs/next/?project=pairs").json()["id"] == item.pk
    PairRound.objects.filter(project=pairs_project, number=1).update(status=PairRound.Status.CLOSED)

    response = client.post(f"/api/pairs/{item.pk}/judgements/", {"label": "H"}, content_type="application/json")

    assert response.status_code == 409
    assert response.json()["code"] == "round_closed" and "not recorded" in response.json()["detail"]
    item.refresh_from_db()
    assert item.votes_h == 0
