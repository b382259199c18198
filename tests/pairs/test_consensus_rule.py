"""Consensus and escalation on every vote pattern of 4, 5 and 6 judges, with and without "?".

Each pattern is checked against the rule as DESIGN.md states it, written out
here case by case (not by calling the code under test): 4 judges; a strict
majority of the valid (H/N) votes is the consensus; otherwise 2 more judges,
and the decision is taken again on all 6; still none at 6 is "no consensus".
Through ``outcome`` directly, and end to end through the queue service, where
judges answer whatever item they are served until nothing is left.
"""

from __future__ import annotations

from itertools import product
from typing import Any

import pytest
from django.db import connection

from annotate.models import JudgeFlag, Membership, PairItem, PairJudgement, PairRound, Project
from annotate.pairmath.consensus import outcome
from annotate.services.pairs import queue
from tests.pairs.conftest import make_judges, make_pair_items

WITH_UNSURE = "HN?"
VALID_ONLY = "HN"


def strict_majority(votes: str) -> str:
    h, n = votes.count("H"), votes.count("N")
    if h > n:
        return "H"
    if n > h:
        return "N"
    return ""


def expected(labels: str) -> tuple[str, str, int]:
    """(state, label, judges needed) for answers in arrival order, the rule as DESIGN.md words it."""
    if len(labels) < 4:
        return ("pending", "", 4)
    first_four = strict_majority(labels[:4])
    if first_four:
        return ("consensus", first_four, 4)
    if len(labels) < 6:
        return ("pending", "", 6)
    all_six = strict_majority(labels[:6])
    if all_six:
        return ("consensus", all_six, 6)
    return ("no_consensus", "", 6)


def patterns(length: int, alphabet: str) -> list[str]:
    return ["".join(labels) for labels in product(alphabet, repeat=length)]


# --------------------------------------------------------------------------- the oracle itself, by hand


@pytest.mark.parametrize(
    ("labels", "result"),
    [
        ("HHHH", ("consensus", "H", 4)),
        ("HHHN", ("consensus", "H", 4)),
        ("H???", ("consensus", "H", 4)),  # one valid vote is a strict majority of the valid votes
        ("????", ("pending", "", 6)),  # no valid vote: no majority, two more judges
        ("HHNN", ("pending", "", 6)),
        ("HN?N", ("consensus", "N", 4)),
        ("HHNNH", ("pending", "", 6)),
        ("HHNNHH", ("consensus", "H", 6)),
        ("HHNNHN", ("no_consensus", "", 6)),
        ("HHNN??", ("no_consensus", "", 6)),
        ("H?N??N", ("consensus", "N", 6)),
        ("??????", ("no_consensus", "", 6)),
    ],
)
def test_the_hand_written_rule_on_worked_cases(labels: str, result: tuple[str, str, int]) -> None:
    assert expected(labels) == result


# --------------------------------------------------------------------------- every pattern through outcome()


@pytest.mark.parametrize("alphabet", [VALID_ONLY, WITH_UNSURE], ids=["H-N", "H-N-unsure"])
@pytest.mark.parametrize("judges", [1, 2, 3, 4, 5, 6])
def test_outcome_on_every_pattern(judges: int, alphabet: str) -> None:
    checked = 0
    for labels in patterns(judges, alphabet):
        got = outcome(list(labels), judges_per_item=4, max_judges=6)
        assert (got.state, got.label, got.judges_needed) == expected(labels), labels
        checked += 1
    assert checked == len(alphabet) ** judges


def test_the_pattern_counts_are_all_of_them() -> None:
    assert sum(len(patterns(n, WITH_UNSURE)) for n in (4, 5, 6)) == 81 + 243 + 729
    assert sum(len(patterns(n, VALID_ONLY)) for n in (4, 5, 6)) == 16 + 32 + 64


# --------------------------------------------------------------------------- end to end through the queue


def complete_patterns(alphabet: str) -> list[str]:
    """Every answer sequence that ends in a decision: 4 decided answers, or a split at 4 and 2 more."""
    done = []
    for first in patterns(4, alphabet):
        if expected(first)[0] == "consensus":
            done.append(first)
        else:
            done.extend(first + more for more in patterns(2, alphabet))
    return done


# How many answers may arrive between two refreshes of PostgreSQL's statistics (about what autovacuum allows).
ANSWERS_PER_ANALYZE = 100


def refresh_planner_statistics() -> None:
    """ANALYZE the queue's tables on PostgreSQL, as autovacuum does for a real campaign's committed answers.

    This test writes ~1,300 answers in one transaction that is never
    committed, so autovacuum never samples them: the planner, left with no
    statistics (or a previous test's), guesses one row per table and joins
    every open item to all of the judge's judgements, a plan that grows with
    the answers (minutes instead of a minute, ten in a full run after other
    tests left their statistics behind). Fresh statistics give the plans a
    real campaign gets; the answers and the checks stay the same. SQLite
    plans without statistics and needs none.
    """
    if connection.vendor != "postgresql":
        return
    tables = ", ".join(model._meta.db_table for model in (PairItem, PairJudgement, PairRound, JudgeFlag, Membership))
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {tables}")


@pytest.mark.django_db
@pytest.mark.parametrize("alphabet", [VALID_ONLY, WITH_UNSURE], ids=["H-N", "H-N-unsure"])
def test_every_pattern_end_to_end_through_the_queue(pairs_project: Project, alphabet: str) -> None:
    """Six judges answer whatever they are served; each item's answers follow its pattern.

    Afterwards every item has exactly the judges the rule asks for, and the
    state, label and counters the rule gives; after every answer the item's
    state matched the rule on the answers so far (escalation included).
    """
    sequences = complete_patterns(alphabet)
    items = make_pair_items(pairs_project, len(sequences))
    pattern_of = {item.pk: sequence for item, sequence in zip(items, sequences, strict=True)}
    judges = make_judges(pairs_project, 6)
    answered: dict[int, str] = {item.pk: "" for item in items}
    answers = 0
    for judge in judges:
        served = queue.serve_next_item(pairs_project, judge)
        while served is not None:
            if answers % ANSWERS_PER_ANALYZE == 0:
                refresh_planner_statistics()
            so_far = answered[served.item_id]
            label = pattern_of[served.item_id][len(so_far)]
            result = queue.record_and_serve_next(pairs_project, judge, served.item_id, label)
            answered[served.item_id] = so_far + label
            answers += 1
            item = result.judgement.item
            state, consensus, needed = expected(answered[served.item_id])
            assert (state_name(item.state), item.label, item.judges_needed) == (state, consensus, needed), (
                answered[served.item_id]
            )
            served = result.next
    for item in PairItem.objects.filter(project=pairs_project):
        sequence = pattern_of[item.pk]
        state, consensus, needed = expected(sequence)
        assert answered[item.pk] == sequence, "the item got more or fewer answers than its pattern decides on"
        assert (state_name(item.state), item.label, item.judges_needed) == (state, consensus, needed), sequence
        assert (item.votes_h, item.votes_n, item.votes_unsure) == tuple(sequence.count(x) for x in "HN?")
        assert item.taken == needed == len(sequence) == PairJudgement.objects.filter(item=item).count()
    if alphabet == WITH_UNSURE:
        assert len(sequences) == 62 + 19 * 9  # decided at 4, and the 19 splits at 4 with 9 endings each
    else:
        assert len(sequences) == 10 + 6 * 4


def state_name(state: Any) -> str:
    return {"open": "pending", "consensus": "consensus", "none": "no_consensus"}[state]
