"""Undo after an admin closed the round: the answer must not be taken back into a round that no longer serves it."""

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
