"""An item with more counted answers than it needed (a judge unblocked after others took their places).

The rule: an item is decided on its first ``judges_needed`` counted answers in
answer order, and the agreement figures read exactly those answers; later ones
are kept and shown (vote counters, export) but count for nothing.
"""

from __future__ import annotations

import json
import random
from typing import Any

import krippendorff
import numpy as np
import pytest

from annotate.models import PairItem, PairJudgement, Project
from annotate.pairmath.consensus import deciding_answers, majority_label, outcome
from annotate.services.pairs import flags, queue
from annotate.services.pairs.agreement import pair_agreement
from annotate.services.pairs.export import export_pairs
from tests.pairs.conftest import Clock, make_judges, make_pair_items

CODE = {"H": 1.0, "N": 0.0, "?": np.nan}


def answer_next(project: Project, judge: Any, expected: PairItem, label: str, clock: Clock) -> None:
    served = queue.serve_next_item(project, judge)
    assert served is not None and served.item_id == expected.pk
    clock.advance(20)
    queue.record_judgement(project, judge, served.item_id, label)


def krippendorff_alpha(table: list[dict[str, str]]) -> float:
    """The krippendorff package on a judges x items reliability matrix; "?" and absent judges missing."""
    judges = sorted({judge for answers in table for judge in answers})
    matrix = np.full((len(judges), len(table)), np.nan)
    for column, answers in enumerate(table):
        for judge, label in answers.items():
            matrix[judges.index(judge), column] = CODE[label]
    return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"))


@pytest.mark.django_db
def test_figures_read_the_answers_that_decided_an_item_not_those_added_by_an_unblock(
    pairs_project: Project, clock: Clock, admin_user: Any
) -> None:
    first, second, third = make_pair_items(pairs_project, 3)  # judges_per_item 4, at most 6
    blocked = make_judges(pairs_project, 1, prefix="blocked")[0]
    judges = make_judges(pairs_project, 4)
    answer_next(pairs_project, blocked, first, "H", clock)  # the earliest answer on the first item
    flags.block_judge(pairs_project, blocked, admin_user, "")
    plan = {first.pk: "HN?N", second.pk: "NNNH", third.pk: "HHHH"}
    for index, judge in enumerate(judges):
        for item in (first, second, third):
            answer_next(pairs_project, judge, item, plan[item.pk][index], clock)
    first.refresh_from_db()
    # Without the blocked judge the first item's four answers are H N ? N: consensus N.
    assert (first.state, first.label, first.judges_needed) == ("consensus", "N", 4)

    flags.unblock_judge(pairs_project, blocked, admin_user)
    first.refresh_from_db()
    # Five counted answers now; in answer order H (unblocked) H N ? | N. The first four decide: H 2, N 1.
    assert PairJudgement.objects.filter(item=first, counted=True, answered_at__isnull=False).count() == 5
    assert (first.state, first.label, first.judges_needed) == ("consensus", "H", 4)
    assert (first.votes_h, first.votes_n, first.votes_unsure) == (2, 2, 1)  # every answer is kept and shown

    report = pair_agreement(pairs_project)
    # All three items are at consensus and count so; the fifth answer (N) would make the first a 2-2 tie.
    assert report["items"] == 3 and report["consensus"] == 100.0 and report["no_consensus"] == 0.0
    assert report["agree80"] == 33.33 and report["unanimous"] == 33.33  # the third item only
    deciding = [
        {"blocked": "H", "judge-00": "H", "judge-01": "N", "judge-02": "?"},  # judge-03's N came after these
        {f"judge-{index:02d}": label for index, label in enumerate("NNNH")},
        {f"judge-{index:02d}": label for index, label in enumerate("HHHH")},
    ]
    assert report["alpha"] == pytest.approx(krippendorff_alpha(deciding))
    every_answer = [deciding[0] | {"judge-03": "N"}, *deciding[1:]]
    assert report["alpha"] != pytest.approx(krippendorff_alpha(every_answer))  # the case tells the rules apart
    round_report = pair_agreement(pairs_project, 1)
    assert (round_report["consensus"], round_report["alpha"]) == (100.0, report["alpha"])
    assert report["rounds"][0]["consensus"] == 100.0

    # The export keeps every counted answer beside the consensus they decided.
    row = json.loads(export_pairs(pairs_project, "pairs").splitlines()[0])
    assert row["votes"] == {"H": 2, "N": 2, "?": 1} and row["consensus"] == "H"
    # ... and says which of them decided it: the answers the figures above count.
    assert (row["deciding_votes"], row["extra_votes"]) == ({"H": 2, "N": 1, "?": 1}, {"H": 0, "N": 1, "?": 0})


def test_the_deciding_answers_give_the_outcome_label_on_any_answer_sequence() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        labels = [rng.choice("HHNN?") for _ in range(rng.randint(0, 9))]
        judges, most = rng.choice([(4, 6), (3, 5), (2, 2), (1, 3)])
        decided = outcome(labels, judges, most)
        if decided.state == "pending":
            continue
        answers = deciding_answers(labels, decided.judges_needed)
        assert answers == labels[: decided.judges_needed]
        assert majority_label(answers) == decided.label
        assert (decided.state == "consensus") == (majority_label(answers) != "")
