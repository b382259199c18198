"""Pair agreement figures: the pure module by hand and against the krippendorff package, and the service on DB rows."""

from __future__ import annotations

import datetime as dt
from typing import Any

import krippendorff
import numpy as np
import pytest
from django.utils import timezone

from annotate.models import PairItem, PairJudgement, Project
from annotate.pairmath.agreement import agreement_figures
from annotate.services.pairs.agreement import UnknownRound, pair_agreement
from tests.conftest import make_user
from tests.pairs.conftest import make_pair_items

CODE = {"H": 1.0, "N": 0.0, "?": np.nan}


def independent_alpha(table: list[dict[Any, str]]) -> float:
    """krippendorff.alpha on a judges x items reliability matrix, "?" and absent judges as NaN."""
    judges = list(dict.fromkeys(judge for answers in table for judge in answers))
    matrix = np.full((len(judges), len(table)), np.nan)
    for column, answers in enumerate(table):
        for judge, label in answers.items():
            matrix[judges.index(judge), column] = CODE[label]
    return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"))


# ----------------------------------------------------------------------------- the pure module

def test_figures_by_hand() -> None:
    items = [
        ["H", "H", "H", "H"],  # consensus H, >= 80% (4/4), unanimous
        ["N", "N", "H", "N"],  # consensus N, 3/4 = 75% < 80%
        ["H", "N", "H", "N", "H", "N"],  # 3-3 tie: no consensus
        ["H", "H", "?", "H", "H", "N"],  # consensus H, 4/5 = 80% >= 80%, not unanimous
        ["N", "?", "?", "?"],  # one valid vote: consensus N, 1/1, unanimous
        ["?", "?", "?", "?"],  # no valid vote: no consensus, neither >= 80% nor unanimous
    ]
    figures = agreement_figures(items)
    assert figures.items == 6
    assert figures.consensus == 66.67  # 4 of 6
    assert figures.agree80 == 50.0  # items 0, 3, 4
    assert figures.unanimous == 33.33  # items 0, 4
    assert figures.no_consensus == 33.33  # items 2, 5
    table = [dict(enumerate(answers)) for answers in items]
    assert figures.alpha == pytest.approx(independent_alpha(table))
    assert figures.reason is None


def test_alpha_agrees_with_krippendorff_on_random_vote_tables() -> None:
    rng = np.random.default_rng(3)
    for _ in range(30):
        table = []
        for _item in range(int(rng.integers(2, 25))):
            judges = rng.choice(10, size=int(rng.integers(2, 7)), replace=False)
            bias = rng.random()
            table.append({
                int(judge): str(rng.choice(["H", "N", "?"], p=[0.8 * bias, 0.8 * (1 - bias), 0.2]))
                for judge in judges
            })
        figures = agreement_figures([list(answers.values()) for answers in table])
        if figures.alpha is None:
            continue
        assert figures.alpha == pytest.approx(independent_alpha(table))


def test_alpha_is_undefined_with_a_reason() -> None:
    nothing = agreement_figures([])
    assert nothing.alpha is None and nothing.items == 0 and nothing.consensus is None
    assert "no item has finished judging" in nothing.reason
    no_pairable = agreement_figures([["H", "?", "?", "?"], ["?", "N", "?", "?"]])
    assert no_pairable.alpha is None and no_pairable.items == 2
    assert no_pairable.reason == (
        "no item has two or more valid (H/N) votes: there is no pair of votes to compare"
    )
    no_variation = agreement_figures([["H", "H", "H", "H"], ["H", "H", "?", "H"]])
    assert no_variation.alpha is None and "every valid vote is H" in no_variation.reason
    assert no_variation.unanimous == 100.0


def test_one_pairable_item_gives_krippendorffs_own_value() -> None:
    # DESIGN.md: alpha is undefined only when no unit has two values or only one value occurs, as for span alpha.
    one_item = agreement_figures([["H", "H", "N", "N"]])
    expected = independent_alpha([{0: "H", 1: "H", 2: "N", 3: "N"}])
    assert one_item.reason is None
    assert one_item.alpha == pytest.approx(expected)
    # An item whose single valid vote cannot be paired changes nothing beside it.
    with_single = agreement_figures([["H", "N", "H", "H"], ["H", "?", "?", "?"]])
    assert with_single.reason is None
    assert with_single.alpha == pytest.approx(independent_alpha([{0: "H", 1: "N", 2: "H", 3: "H"}, {0: "H"}]))


def test_unknown_answer_is_named() -> None:
    with pytest.raises(ValueError, match="item 1: answer 'X' is not one of H, N, ?"):
        agreement_figures([["H", "N"], ["X"]])


# ----------------------------------------------------------------------------- the service on DB rows

def judge_names(count: int) -> list[Any]:
    return [make_user(f"judge{index}") for index in range(count)]


def record(item: PairItem, answers: dict[Any, str], *, state: str, label: str = "", counted: bool = True) -> None:
    """Answered judgements in the order given (a minute apart), and the item's state.

    A finished item needed all its answers (judges_needed), as the queue leaves an item it decided.
    """
    start = timezone.now() - dt.timedelta(hours=1)
    for order, (judge, answer) in enumerate(answers.items()):
        served = start + dt.timedelta(minutes=order)
        PairJudgement.objects.create(
            item=item, judge=judge, round=item.round, label=answer, served_at=served,
            answered_at=served + dt.timedelta(seconds=20), seconds=20.0, counted=counted,
        )
    finished = {"judges_needed": len(answers)} if state != "open" else {}
    PairItem.objects.filter(pk=item.pk).update(state=state, label=label, **finished)


@pytest.fixture
def judges(db: None) -> list[Any]:
    return judge_names(7)


@pytest.fixture
def round_one(pairs_project: Project, judges: list[Any]) -> list[dict[Any, str]]:
    """Four finished round-1 items, one still open, one served unanswered, one labelled on import."""
    j = judges
    tables = [
        {j[0]: "H", j[1]: "H", j[2]: "H", j[3]: "H"},  # consensus H, unanimous
        {j[0]: "N", j[1]: "N", j[2]: "H", j[3]: "N"},  # consensus N, 75%
        {j[0]: "H", j[1]: "N", j[2]: "H", j[3]: "N", j[4]: "H", j[5]: "N"},  # no consensus at 6
        {j[0]: "H", j[1]: "N", j[2]: "?", j[3]: "?", j[4]: "N", j[5]: "N"},  # escalated, consensus N, 3/4 valid
    ]
    items = make_pair_items(pairs_project, 7)
    states = [("consensus", "H"), ("consensus", "N"), ("none", ""), ("consensus", "N")]
    for item, answers, (state, label) in zip(items, tables, states, strict=False):
        record(item, answers, state=state, label=label)
    # Still being judged: two answers that no figure may count yet.
    record(items[4], {j[0]: "N", j[1]: "H"}, state="open")
    # Served to j6 and not answered yet (label ""), on an item whose other answers are in.
    record(items[5], {j[0]: "H", j[1]: "H", j[2]: "H", j[3]: "H"}, state="consensus", label="H")
    PairJudgement.objects.create(item=items[5], judge=j[6], round=items[5].round, label="", served_at=timezone.now())
    tables.append({j[0]: "H", j[1]: "H", j[2]: "H", j[3]: "H"})
    # Labelled on import: consensus without votes, outside agreement.
    PairItem.objects.filter(pk=items[6].pk).update(state="labelled", label="N", round=None)
    return tables


def test_service_counts_finished_items_and_answered_judgements(
    pairs_project: Project, round_one: list[dict[Any, str]]
) -> None:
    report = pair_agreement(pairs_project)
    # Five finished items: consensus 4 (items 0, 1, 3, 5), no consensus 1 (item 2);
    # >= 80% and unanimous: items 0 and 5 (item 1 is 3/4, item 3 is 3/4 of its valid votes).
    assert report["items"] == 5
    assert report["consensus"] == 80.0
    assert report["no_consensus"] == 20.0
    assert report["agree80"] == 40.0
    assert report["unanimous"] == 40.0
    assert report["alpha"] == pytest.approx(independent_alpha(round_one))
    assert report["reason"] is None
    assert report["round"] is None
    assert [entry["round"] for entry in report["rounds"]] == [1]
    assert report["rounds"][0]["alpha"] == pytest.approx(report["alpha"])


def test_service_per_round_and_overall(
    pairs_project: Project, judges: list[Any], round_one: list[dict[Any, str]]
) -> None:
    j = judges
    round_two = [
        {j[3]: "N", j[4]: "N", j[5]: "N", j[6]: "N"},
        {j[3]: "H", j[4]: "N", j[5]: "H", j[6]: "H"},
    ]
    items = make_pair_items(pairs_project, 2, round_number=2)
    record(items[0], round_two[0], state="consensus", label="N")
    record(items[1], round_two[1], state="consensus", label="H")
    second = pair_agreement(pairs_project, 2)
    assert second["round"] == 2 and "rounds" not in second
    assert (second["items"], second["consensus"], second["agree80"], second["unanimous"]) == (2, 100.0, 50.0, 50.0)
    assert second["alpha"] == pytest.approx(independent_alpha(round_two))
    first = pair_agreement(pairs_project, 1)
    assert first["items"] == 5 and first["alpha"] == pytest.approx(independent_alpha(round_one))
    overall = pair_agreement(pairs_project)
    assert overall["items"] == 7
    assert overall["consensus"] == round(100 * 6 / 7, 2)  # 85.71
    assert overall["unanimous"] == round(100 * 3 / 7, 2)  # 42.86
    assert overall["alpha"] == pytest.approx(independent_alpha(round_one + round_two))
    assert [(entry["round"], entry["items"]) for entry in overall["rounds"]] == [(1, 5), (2, 2)]


def test_a_blocked_judges_judgements_stop_counting(
    pairs_project: Project, judges: list[Any], round_one: list[dict[Any, str]]
) -> None:
    before = pair_agreement(pairs_project)
    # j2 is blocked: none of their judgements counts any more. As the flag service and the queue would leave it:
    # items 0, 1 and 2 went back to the queue and j6 answered in j2's place; item 3 (j2 said "?") still has a
    # consensus from its first four counted answers (H N ? N), which needs 4 judges now, so its fifth answer
    # (j5's N) is kept but decides nothing and is not counted; item 5 went back to open (j6's serve is unanswered).
    j = judges
    PairJudgement.objects.filter(judge=j[2]).update(counted=False)
    items = list(PairItem.objects.filter(project=pairs_project, round__number=1).order_by("id"))
    replacement = {0: "H", 1: "H", 2: "N"}
    after_tables = []
    for index, table in enumerate(round_one[:4]):
        answers = {judge: label for judge, label in table.items() if judge != j[2]}
        if index == 3:
            answers.pop(j[5])
        if index in replacement:
            answers[j[6]] = replacement[index]
            PairJudgement.objects.create(
                item=items[index], judge=j[6], round=items[index].round, label=replacement[index],
                served_at=timezone.now(), answered_at=timezone.now(),
            )
        after_tables.append(answers)
    # Item 2 is now j0 H, j1 N, j3 N, j4 H, j5 N, j6 N: N has 4 of 6, a consensus.
    PairItem.objects.filter(pk=items[2].pk).update(state="consensus", label="N")
    PairItem.objects.filter(pk=items[3].pk).update(judges_needed=4)
    PairItem.objects.filter(pk=items[5].pk).update(state="open", label="")
    after = pair_agreement(pairs_project)
    # item 0: H H H H (unanimous); item 1: N N N H (75%); item 2: 4 of 6 N; item 3: H N ? N, 2 of 3 N.
    assert after["items"] == 4
    assert after["consensus"] == 100.0 and after["no_consensus"] == 0.0
    assert after["unanimous"] == 25.0 and after["agree80"] == 25.0
    assert after["alpha"] == pytest.approx(independent_alpha(after_tables))
    assert after["alpha"] != pytest.approx(before["alpha"])
    # The blocked judge's answers are still on record, just not counted.
    assert PairJudgement.objects.filter(judge=j[2], counted=False).count() == 5


def test_unknown_round_is_refused_naming_it(pairs_project: Project) -> None:
    make_pair_items(pairs_project, 1)
    with pytest.raises(UnknownRound, match="project 'pairs' has no round 3 \\(rounds: 1\\)"):
        pair_agreement(pairs_project, 3)


def test_empty_project_has_no_figures(pairs_project: Project) -> None:
    report = pair_agreement(pairs_project)
    assert report["items"] == 0 and report["alpha"] is None and report["consensus"] is None
    assert report["rounds"] == []
    assert "no item has finished judging" in report["reason"]


def test_service_takes_two_queries_whatever_the_item_count(
    pairs_project: Project, judges: list[Any], django_assert_num_queries: Any
) -> None:
    items = make_pair_items(pairs_project, 30)
    for index, item in enumerate(items):
        record(item, {judges[k]: "HN"[(index + k) % 3 == 0] for k in range(4)}, state="consensus", label="H")
    with django_assert_num_queries(2):
        report = pair_agreement(pairs_project)
    assert report["items"] == 30
