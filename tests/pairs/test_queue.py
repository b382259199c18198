"""The next-item queue: one serve at a time, no item twice, never more judges than needed, closest to completion first."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from annotate.models import BlockedJudge, Membership, PairConfig, PairItem, PairJudgement, PairRound, Project
from annotate.services.pairs import queue
from tests.conftest import make_user
from tests.pairs.conftest import Clock, make_judges, make_pair_items

pytestmark = pytest.mark.django_db


def answer(project: Project, user: Any, label: str, clock: Clock | None = None, seconds: float = 15.0
           ) -> PairJudgement:
    """Serve the judge's next item and answer it ``seconds`` later (by the test clock)."""
    served = queue.serve_next_item(project, user)
    assert served is not None, f"{user} got no item"
    if clock is not None:
        clock.advance(seconds)
    return queue.record_judgement(project, user, served.item_id, label)


def fresh(item: PairItem) -> PairItem:
    return PairItem.objects.get(pk=item.pk)


def configured(project: Project, **settings: Any) -> Project:
    """The project read again after its PairConfig changed."""
    PairConfig.objects.filter(project=project).update(**settings)
    return Project.objects.get(pk=project.pk)


# --------------------------------------------------------------------------- serving


def test_a_serve_creates_an_unanswered_judgement_and_takes_a_slot(pairs_project: Project, alice: Any, clock: Clock
                                                                   ) -> None:
    item = make_pair_items(pairs_project, 1)[0]
    served = queue.serve_next_item(pairs_project, alice)
    assert served is not None and served.item_id == item.pk
    assert served.label == "" and served.answered_at is None and served.served_at == clock.moment
    assert served.counted and served.round_id == item.round_id
    assert fresh(item).taken == 1


def test_asking_again_before_answering_returns_the_same_item(pairs_project: Project, alice: Any) -> None:
    make_pair_items(pairs_project, 3)
    first = queue.serve_next_item(pairs_project, alice)
    again = queue.serve_next_item(pairs_project, alice)
    assert first is not None and again is not None
    assert again.pk == first.pk
    assert PairJudgement.objects.filter(judge=alice).count() == 1
    assert sum(PairItem.objects.values_list("taken", flat=True)) == 1


def test_the_queue_prefers_items_closest_to_completion_then_round_then_id(pairs_project: Project, clock: Clock
                                                                          ) -> None:
    round_one = make_pair_items(pairs_project, 2, round_number=1)
    round_two = make_pair_items(pairs_project, 2, round_number=2)
    judges = make_judges(pairs_project, 4)
    # The second item of round 2 gets two answers, the first of round 1 one answer.
    for judge in judges[:2]:
        PairJudgement.objects.create(item=round_two[1], judge=judge, label="H", served_at=clock.moment,
                                     answered_at=clock.moment, seconds=12)
    PairJudgement.objects.create(item=round_one[0], judge=judges[2], label="N", served_at=clock.moment,
                                 answered_at=clock.moment, seconds=12)
    PairItem.objects.filter(pk=round_two[1].pk).update(votes_h=2, taken=2)
    PairItem.objects.filter(pk=round_one[0].pk).update(votes_n=1, taken=1)
    order = []
    for index in range(4):
        user = make_user(f"asker-{index}")
        Membership.objects.create(project=pairs_project, user=user, role=Membership.Role.ANNOTATOR)
        order.append(queue.serve_next_item(pairs_project, user).item_id)
    # Most answers first; equal answers (one each now, for the fresh judges' serves do not count) by round, then id.
    assert order == [round_two[1].pk, round_two[1].pk, round_one[0].pk, round_one[0].pk]
    other = make_user("asker-x")
    Membership.objects.create(project=pairs_project, user=other, role=Membership.Role.ANNOTATOR)
    # round_two[1] now has 4 slots taken (2 answers, 2 serves): full. round_one[0]: 1 answer + 2 serves.
    assert queue.serve_next_item(pairs_project, other).item_id == round_one[0].pk


def test_items_with_equal_answers_come_by_round_number_then_id(pairs_project: Project) -> None:
    round_two = make_pair_items(pairs_project, 2, round_number=2)
    round_one = make_pair_items(pairs_project, 2, round_number=1)
    judges = make_judges(pairs_project, 4)
    served = [queue.serve_next_item(pairs_project, judge).item_id for judge in judges[:1]]
    assert served == [round_one[0].pk]
    assert round_two[0].round.number == 2


def test_no_judge_is_served_an_item_twice_and_no_item_gets_more_judges_than_it_needs(
    pairs_project: Project, clock: Clock
) -> None:
    items = make_pair_items(pairs_project, 3)
    judges = make_judges(pairs_project, 6)
    seen: dict[int, list[int]] = {}
    for _ in range(3):
        for judge in judges:
            served = queue.serve_next_item(pairs_project, judge)
            if served is None:
                continue
            assert served.item_id not in seen.setdefault(judge.pk, [])
            seen[judge.pk].append(served.item_id)
            clock.advance(20)
            queue.record_judgement(pairs_project, judge, served.item_id, "H")
    for item in items:
        item = fresh(item)
        assert item.state == PairItem.State.CONSENSUS and item.label == "H"
        assert item.judges_needed == 4 and item.taken == 4 and item.votes_h == 4
        assert item.judgements.count() == 4
    assert all(queue.serve_next_item(pairs_project, judge) is None for judge in judges)


def test_items_outside_an_open_round_are_never_served(pairs_project: Project, alice: Any) -> None:
    make_pair_items(pairs_project, 2, round_number=None)  # the pool
    closed = make_pair_items(pairs_project, 1, round_number=3)
    PairRound.objects.filter(number=3).update(status=PairRound.Status.CLOSED)
    assert queue.serve_next_item(pairs_project, alice) is None
    PairRound.objects.filter(number=3).update(status=PairRound.Status.OPEN)
    assert queue.serve_next_item(pairs_project, alice).item_id == closed[0].pk


def test_a_held_serve_of_an_item_whose_round_closed_goes_back_and_another_item_comes(
    pairs_project: Project, alice: Any
) -> None:
    first = make_pair_items(pairs_project, 1, round_number=1)[0]
    second = make_pair_items(pairs_project, 1, round_number=2)[0]
    assert queue.serve_next_item(pairs_project, alice).item_id == first.pk
    PairRound.objects.filter(number=1).update(status=PairRound.Status.CLOSED)
    assert queue.serve_next_item(pairs_project, alice).item_id == second.pk
    assert fresh(first).taken == 0
    assert not PairJudgement.objects.filter(item=first).exists()


# --------------------------------------------------------------------------- answering and consensus


def test_a_clock_that_went_back_records_no_time_rather_than_zero(pairs_project: Project, alice: Any,
                                                                   clock: Clock) -> None:
    """A server clock set back between serve and answer (NTP, a VM restored): the time is not known, so it is stored as
    None, which the speed flag leaves out, instead of 0 s, which would count as the fastest answer there is."""
    make_pair_items(pairs_project, 1)
    served = queue.serve_next_item(pairs_project, alice)
    clock.advance(-30)
    judgement = queue.record_judgement(pairs_project, alice, served.item_id, "H")
    assert judgement.label == "H" and judgement.answered_at == clock.moment
    assert judgement.seconds is None
    assert PairJudgement.objects.get(pk=judgement.pk).seconds is None


def test_an_answer_records_the_label_and_the_server_measured_seconds(pairs_project: Project, alice: Any,
                                                                     clock: Clock) -> None:
    item = make_pair_items(pairs_project, 1)[0]
    served = queue.serve_next_item(pairs_project, alice)
    clock.advance(12.5)
    judgement = queue.record_judgement(pairs_project, alice, served.item_id, "N")
    assert judgement.label == "N" and judgement.seconds == 12.5 and judgement.answered_at == clock.moment
    item = fresh(item)
    assert (item.votes_h, item.votes_n, item.votes_unsure, item.taken) == (0, 1, 0, 1)
    assert item.state == PairItem.State.OPEN and item.judges_needed == 4


def test_a_split_at_four_asks_two_more_judges_and_a_split_at_six_is_no_consensus(
    pairs_project: Project, clock: Clock
) -> None:
    item = make_pair_items(pairs_project, 1)[0]
    judges = make_judges(pairs_project, 7)
    for judge, label in zip(judges[:4], "HNHN", strict=True):
        answer(pairs_project, judge, label, clock)
    item = fresh(item)
    assert (item.state, item.judges_needed, item.taken) == (PairItem.State.OPEN, 6, 4)
    for judge, label in zip(judges[4:6], "HN", strict=True):
        answer(pairs_project, judge, label, clock)
    item = fresh(item)
    assert (item.state, item.label, item.judges_needed) == (PairItem.State.NO_CONSENSUS, "", 6)
    assert queue.serve_next_item(pairs_project, judges[6]) is None


def test_unsure_answers_count_as_judges_but_not_as_votes(pairs_project: Project, clock: Clock) -> None:
    item = make_pair_items(pairs_project, 1)[0]
    judges = make_judges(pairs_project, 4)
    for judge, label in zip(judges, "H??N", strict=True):
        answer(pairs_project, judge, label, clock)
    item = fresh(item)
    assert (item.votes_h, item.votes_n, item.votes_unsure) == (1, 1, 2)
    assert item.state == PairItem.State.OPEN and item.judges_needed == 6


@pytest.mark.parametrize("label", ["h", "", "X", "HN", None, 1, ["H"]])
def test_a_label_other_than_h_n_or_unsure_is_refused_naming_the_allowed_ones(
    pairs_project: Project, alice: Any, label: Any
) -> None:
    item = make_pair_items(pairs_project, 1)[0]
    served = queue.serve_next_item(pairs_project, alice)
    with pytest.raises(queue.BadLabel) as refused:
        queue.record_judgement(pairs_project, alice, served.item_id, label)
    assert refused.value.status == 400
    assert "H, N, ?" in refused.value.message and repr(label) in refused.value.message
    assert PairJudgement.objects.get(pk=served.pk).label == ""
    assert fresh(item).answered == 0


def test_a_second_judgement_of_the_same_item_is_a_conflict_and_changes_nothing(
    pairs_project: Project, alice: Any, clock: Clock
) -> None:
    item = make_pair_items(pairs_project, 2)[0]
    first = answer(pairs_project, alice, "H", clock)
    assert first.item_id == item.pk
    with pytest.raises(queue.AlreadyJudged) as refused:
        queue.record_judgement(pairs_project, alice, item.pk, "N")
    assert refused.value.status == 409 and "already judged" in refused.value.message
    assert PairJudgement.objects.get(pk=first.pk).label == "H"
    assert fresh(item).votes_h == 1 and fresh(item).votes_n == 0


def test_an_item_not_served_to_you_cannot_be_judged(pairs_project: Project, alice: Any, bob: Any) -> None:
    items = make_pair_items(pairs_project, 2)
    bobs = queue.serve_next_item(pairs_project, bob)
    with pytest.raises(queue.NotServed) as refused:
        queue.record_judgement(pairs_project, alice, bobs.item_id, "H")
    assert refused.value.status == 409 and "not served to you" in refused.value.message
    with pytest.raises(queue.NoSuchItem):
        queue.record_judgement(pairs_project, alice, 10**9, "H")
    assert sum(fresh(item).answered for item in items) == 0
    assert not PairJudgement.objects.filter(judge=alice).exists()


def test_an_item_of_another_project_is_no_such_item(pairs_project: Project, alice: Any) -> None:
    other = Project.objects.create(name="Other", slug="other", kind=Project.Kind.PAIRS)
    PairConfig.objects.create(project=other)
    Membership.objects.create(project=other, user=alice, role=Membership.Role.ANNOTATOR)
    foreign = make_pair_items(other, 1)[0]
    queue.serve_next_item(other, alice)
    make_pair_items(pairs_project, 1)
    with pytest.raises(queue.NoSuchItem):
        queue.record_judgement(pairs_project, alice, foreign.pk, "H")


# --------------------------------------------------------------------------- who may judge


def test_outsiders_auditors_and_blocked_judges_get_no_items(pairs_project: Project, charlie: Any, bob: Any,
                                                           admin_user: Any) -> None:
    make_pair_items(pairs_project, 2)
    with pytest.raises(queue.NotAJudge) as outsider:
        queue.serve_next_item(pairs_project, charlie)
    assert outsider.value.status == 404
    auditor = make_user("audrey")
    Membership.objects.create(project=pairs_project, user=auditor, role=Membership.Role.AUDITOR)
    with pytest.raises(queue.NotAJudge) as wrong_role:
        queue.serve_next_item(pairs_project, auditor)
    assert wrong_role.value.status == 403 and "auditor" in wrong_role.value.message
    BlockedJudge.objects.create(project=pairs_project, judge=bob, blocked_by=admin_user)
    with pytest.raises(queue.JudgeBlocked) as blocked:
        queue.serve_next_item(pairs_project, bob)
    assert blocked.value.status == 403 and "blocked" in blocked.value.message
    assert PairJudgement.objects.count() == 0
    # Admins judge too (trying the page, or labelling themselves).
    assert queue.serve_next_item(pairs_project, admin_user) is not None


# --------------------------------------------------------------------------- expired serves


def test_an_expired_serve_is_released_when_someone_asks_and_the_judge_never_gets_that_item_again(
    pairs_project: Project, alice: Any, bob: Any, clock: Clock
) -> None:
    pairs_project = configured(pairs_project, serve_minutes=20, judges_per_item=1, max_judges_per_item=1)
    first, second = make_pair_items(pairs_project, 2)
    PairItem.objects.update(judges_needed=1)
    assert queue.serve_next_item(pairs_project, alice).item_id == first.pk
    clock.advance(20 * 60 - 1)
    assert queue.serve_next_item(pairs_project, bob).item_id == second.pk  # alice's serve still holds its slot
    clock.advance(2)
    assert queue.serve_next_item(pairs_project, bob).item_id == second.pk  # bob's own serve, unanswered
    released = PairJudgement.objects.get(judge=alice)
    assert not released.counted and released.label == "" and fresh(first).taken == 0
    # The slot went to nobody yet: a late answer takes it back and counts.
    late = queue.record_judgement(pairs_project, alice, first.pk, "N")
    assert late.counted and late.seconds == pytest.approx(20 * 60 + 1)
    assert fresh(first).state == PairItem.State.CONSENSUS and fresh(first).taken == 1
    assert queue.serve_next_item(pairs_project, alice) is None  # second is bob's; first is done


def test_a_late_answer_after_the_slot_went_to_another_judge_is_refused(
    pairs_project: Project, alice: Any, bob: Any, clock: Clock
) -> None:
    pairs_project = configured(pairs_project, serve_minutes=5, judges_per_item=1, max_judges_per_item=1)
    item = make_pair_items(pairs_project, 1)[0]
    PairItem.objects.update(judges_needed=1)
    queue.serve_next_item(pairs_project, alice)
    clock.advance(5 * 60 + 1)
    assert queue.serve_next_item(pairs_project, bob).item_id == item.pk
    with pytest.raises(queue.ServeExpired) as refused:
        queue.record_judgement(pairs_project, alice, item.pk, "H")
    assert refused.value.status == 409 and "expired after 5 minutes" in refused.value.message
    assert PairJudgement.objects.get(judge=alice).label == ""
    assert fresh(item).taken == 1 and fresh(item).answered == 0
    queue.record_judgement(pairs_project, bob, item.pk, "H")
    assert fresh(item).state == PairItem.State.CONSENSUS


# --------------------------------------------------------------------------- undo


def test_undo_puts_the_last_answer_back_and_the_next_item_asked_for_is_that_one(
    pairs_project: Project, alice: Any, clock: Clock
) -> None:
    first, second = make_pair_items(pairs_project, 2)
    result = queue.serve_next_item(pairs_project, alice)
    clock.advance(30)
    answered = queue.record_and_serve_next(pairs_project, alice, result.item_id, "H")
    assert answered.next is not None and answered.next.item_id == second.pk
    assert answered.progress == {"answered": 1, "left": 1}  # the next item, served and not answered yet
    clock.advance(5)
    undone = queue.undo_last_judgement(pairs_project, alice)
    assert undone is not None and undone.item_id == first.pk
    assert undone.label == "" and undone.answered_at is None and undone.seconds is None
    assert undone.served_at == clock.moment
    assert (fresh(first).votes_h, fresh(first).taken) == (0, 1)
    assert fresh(second).taken == 0 and not PairJudgement.objects.filter(item=second).exists()
    assert queue.serve_next_item(pairs_project, alice).item_id == first.pk
    clock.advance(8)
    assert queue.record_judgement(pairs_project, alice, first.pk, "N").seconds == 8
    assert (fresh(first).votes_h, fresh(first).votes_n) == (0, 1)


def test_undo_takes_back_a_consensus_the_answer_made(pairs_project: Project, clock: Clock) -> None:
    item = make_pair_items(pairs_project, 1)[0]
    judges = make_judges(pairs_project, 4)
    for judge in judges:
        answer(pairs_project, judge, "N", clock)
    assert fresh(item).state == PairItem.State.CONSENSUS and fresh(item).label == "N"
    queue.undo_last_judgement(pairs_project, judges[3])
    item = fresh(item)
    assert (item.state, item.label, item.votes_n, item.taken) == (PairItem.State.OPEN, "", 3, 4)


def test_undo_with_nothing_answered_returns_none(pairs_project: Project, alice: Any) -> None:
    make_pair_items(pairs_project, 1)
    assert queue.undo_last_judgement(pairs_project, alice) is None


# --------------------------------------------------------------------------- progress and costs


def test_progress_counts_the_judges_answers_and_the_items_left_for_them(pairs_project: Project, alice: Any,
                                                                        bob: Any, clock: Clock) -> None:
    make_pair_items(pairs_project, 3)
    assert queue.judge_progress(pairs_project, alice) == {"answered": 0, "left": 3}
    answer(pairs_project, alice, "H", clock)
    assert queue.judge_progress(pairs_project, alice) == {"answered": 1, "left": 2}
    queue.serve_next_item(pairs_project, alice)  # a held serve is still left: it is on her screen, unanswered
    assert queue.judge_progress(pairs_project, alice) == {"answered": 1, "left": 2}
    assert queue.judge_progress(pairs_project, bob) == {"answered": 0, "left": 3}


def test_answering_and_getting_the_next_item_takes_a_handful_of_queries(
    pairs_project: Project, alice: Any, clock: Clock, django_assert_max_num_queries: Any
) -> None:
    make_pair_items(pairs_project, 30)
    project = configured(pairs_project, min_judgements=3)
    project.pair_config  # noqa: B018  (loaded once, as the API's project lookup does)
    served = queue.serve_next_item(project, alice)
    for _ in range(4):  # past min_judgements: the spam rules run too
        clock.advance(15)
        served = queue.record_and_serve_next(project, alice, served.item_id, "H").next
    # The counts include each transaction's SAVEPOINT and RELEASE (in production BEGIN/COMMIT, not logged).
    # Locking the judge is one statement on SQLite, two on PostgreSQL (the lock, then the read: see locks._lock_judge).
    lock = 2 if connection.vendor == "postgresql" else 1
    # Asking again for a held item: release expired serves (1), lock the judge, read the held serve (1).
    with django_assert_max_num_queries(2 + lock + 4):
        assert queue.serve_next_item(project, alice).pk == served.pk
    clock.advance(15)
    # One transaction: lock the judge; the serve, its item and round (1), the answer (1), the item's labels (1), its
    # outcome (1); the spam rules' sums (1), her flags (1) and the same-label flag her N clears (1); the pick (1),
    # the claim (1), the new serve (1). After the commit: the item with its texts (1), the items left (1).
    with django_assert_max_num_queries(12 + lock + 2):
        result = queue.record_and_serve_next(project, alice, served.item_id, "N")
    assert result.next is not None and result.progress["answered"] == 5


def test_closest_to_completion_means_fewest_answers_still_needed(pairs_project: Project, clock: Clock) -> None:
    # An item split 2-2 and escalated to 6 judges needs 2 more; an item with 3 of its 4 answers needs 1 more.
    escalated, nearly_done = make_pair_items(pairs_project, 2)
    judges = make_judges(pairs_project, 7)
    for judge, label in zip(judges[:4], "HHNN", strict=True):
        PairJudgement.objects.create(item=escalated, judge=judge, label=label, served_at=clock.moment,
                                     answered_at=clock.moment, seconds=12)
    for judge in judges[4:7]:
        PairJudgement.objects.create(item=nearly_done, judge=judge, label="H", served_at=clock.moment,
                                     answered_at=clock.moment, seconds=12)
    PairItem.objects.filter(pk=escalated.pk).update(votes_h=2, votes_n=2, taken=4, judges_needed=6)
    PairItem.objects.filter(pk=nearly_done.pk).update(votes_h=3, taken=3)
    asker = make_user("asker")
    Membership.objects.create(project=pairs_project, user=asker, role=Membership.Role.ANNOTATOR)
    assert queue.serve_next_item(pairs_project, asker).item_id == nearly_done.pk
