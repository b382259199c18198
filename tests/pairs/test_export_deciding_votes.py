"""The pairs export says which answers count, and the HaDes export changes only the label of a judged -1 row.

After a judge is blocked an item can hold more answers than it is decided on
(its first ``judges_needed`` counted answers). The export's ``deciding_votes``
are those answers, ``extra_votes`` the rest; the agreement figures recomputed
from ``deciding_votes`` alone, with the ``krippendorff`` package and by hand,
are the app's ``pair_agreement`` figures.
"""

from __future__ import annotations

import json
from typing import Any

import krippendorff
import numpy as np
import pytest

from annotate.models import PairConfig, PairItem, PairRound, Project
from annotate.services.pairs import flags, queue
from annotate.services.pairs.agreement import pair_agreement
from annotate.services.pairs.export import export_pairs
from annotate.services.pairs.ingest import import_pairs
from tests.pairs.conftest import Clock, make_judges, make_pair_items

pytestmark = pytest.mark.django_db

# Answers per item by judge (judge-00 is the spammer, who answers first); judges a item never reaches are unused.
PLAN = {
    # 2-2 with the spammer's N, so six judges; without it H H N H | H: decided H on the first four (3H/1N).
    "split": {"judge-00": "N", "judge-01": "H", "judge-02": "H", "judge-03": "N", "judge-04": "H", "judge-05": "H"},
    # 3-3 at six judges with the spammer; without it H N N N | H: decided N on the first four.
    "tie": {"judge-00": "H", "judge-01": "H", "judge-02": "N", "judge-03": "N", "judge-04": "N", "judge-05": "H"},
    # Consensus at four with the spammer; without it three answers, so the item goes back to the queue.
    "plain": {"judge-00": "H", "judge-01": "N", "judge-02": "N", "judge-03": "N", "judge-06": "N"},
    "mixed": {"judge-00": "N", "judge-01": "H", "judge-02": "H", "judge-03": "H", "judge-06": "N"},
    "unsure": {"judge-00": "?", "judge-01": "H", "judge-02": "?", "judge-03": "H", "judge-06": "H"},
}


def answer_everything_served(project: Project, judge: Any, names: dict[int, str], clock: Clock) -> None:
    """The judge answers every item the queue serves them, as PLAN says."""
    while (served := queue.serve_next_item(project, judge)) is not None:
        clock.advance(20)
        queue.record_judgement(project, judge, served.item_id, PLAN[names[served.item_id]][judge.username])


def by_hand(votes: list[dict[str, int]]) -> dict[str, Any]:
    """DESIGN.md's figures from {"H", "N", "?"} counts: shares by hand, alpha from the krippendorff package.

    Alpha goes through a judges x items reliability matrix ("?" left missing):
    only an item's counts matter for nominal alpha, so the k-th vote of an item
    sits in row k.
    """
    items = len(votes)
    valid = [(count["H"], count["N"]) for count in votes]
    matrix = np.full((max(h + n for h, n in valid), items), np.nan)
    for column, (h, n) in enumerate(valid):
        matrix[: h + n, column] = [1.0] * h + [0.0] * n
    return {
        "items": items,
        "consensus": round(100 * sum(h != n for h, n in valid) / items, 2),
        "agree80": round(100 * sum(h + n > 0 and max(h, n) / (h + n) >= 0.8 for h, n in valid) / items, 2),
        "unanimous": round(100 * sum(h + n > 0 and min(h, n) == 0 for h, n in valid) / items, 2),
        "alpha": float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")),
    }


def test_pair_export_gives_the_answers_pair_agreement_counts_after_a_judge_is_blocked(
    pairs_project: Project, clock: Clock, admin_user: Any
) -> None:
    items = make_pair_items(pairs_project, len(PLAN))
    names = {item.pk: name for item, name in zip(items, PLAN, strict=True)}
    judges = make_judges(pairs_project, 7)
    for judge in judges[:6]:
        answer_everything_served(pairs_project, judge, names, clock)
    flags.block_judge(pairs_project, judges[0], admin_user, "disagrees with the others")
    answer_everything_served(pairs_project, judges[6], names, clock)  # takes the places the block opened

    split = PairItem.objects.get(pk=items[0].pk)
    assert (split.state, split.label, split.judges_needed, split.answered) == ("consensus", "H", 4, 5)
    assert set(PairItem.objects.filter(project=pairs_project).values_list("state", flat=True)) == {"consensus"}

    rows = {row["item_id"]: row for row in map(json.loads, export_pairs(pairs_project, "pairs").splitlines())}
    by_name = {name: rows[f"i{index}"] for index, name in enumerate(PLAN)}
    assert by_name["split"]["votes"] == {"H": 4, "N": 1, "?": 0}  # every answer of a judge not blocked
    assert by_name["split"]["deciding_votes"] == {"H": 3, "N": 1, "?": 0}
    assert by_name["split"]["extra_votes"] == {"H": 1, "N": 0, "?": 0}
    assert (by_name["tie"]["deciding_votes"], by_name["tie"]["extra_votes"]) == (
        {"H": 1, "N": 3, "?": 0}, {"H": 1, "N": 0, "?": 0})
    assert by_name["plain"]["extra_votes"] == {"H": 0, "N": 0, "?": 0}
    for row in rows.values():
        assert {label: row["deciding_votes"][label] + row["extra_votes"][label] for label in "HN?"} == row["votes"]
        assert row["consensus"] in ("H", "N")

    app = pair_agreement(pairs_project)
    recomputed = by_hand([row["deciding_votes"] for row in rows.values()])
    assert {key: app[key] for key in recomputed if key != "alpha"} == {
        key: value for key, value in recomputed.items() if key != "alpha"}
    assert app["alpha"] == pytest.approx(recomputed["alpha"], abs=1e-12)
    # Every answer, as the old export gave it, gives other figures: the case tells the two apart.
    every = by_hand([row["votes"] for row in rows.values()])
    assert every["agree80"] != app["agree80"] and every["alpha"] != pytest.approx(app["alpha"])


# A -1 row with escaped non-ASCII, its keys in another order, compact separators and a nested "hallucination";
# one with spaces around every separator; and a labelled row, which must come back untouched.
HADES_LINES = [
    '{"meta":{"hallucination":-1},"hallucination":-1,"replaced_ids":[0,0],"replaced":"===jun\\u00edpero=== serra"}',
    '{ "replaced" : "it was ===\\u00e9t\\u00e9=== ." , "hallucination" : -1 , "replaced_ids" : [ 2 , 2 ] }',
    '{"replaced":"caf\\u00e9 ===noir===","replaced_ids":[1,1],"hallucination":1,"score":1.50}',
]
# What the export must give once the -1 rows reach consensus (H, then N): only the top-level value changes.
EXPECTED_LINES = [
    '{"meta":{"hallucination":-1},"hallucination":1,"replaced_ids":[0,0],"replaced":"===jun\\u00edpero=== serra"}',
    '{ "replaced" : "it was ===\\u00e9t\\u00e9=== ." , "hallucination" : 0 , "replaced_ids" : [ 2 , 2 ] }',
    HADES_LINES[2],
]


def test_a_judged_hades_row_comes_back_byte_for_byte_but_for_its_label(db: None, clock: Clock) -> None:
    content = ("\n".join(HADES_LINES) + "\n").encode()
    project = import_pairs("hades", [("odd.jsonl", content)], "hades").project
    pair_round = PairRound.objects.create(project=project, number=1, size=2, seed=1)
    config = PairConfig.objects.get_or_create(project=project)[0]
    pooled = list(PairItem.objects.filter(project=project, state=PairItem.State.POOL).order_by("id"))
    assert len(pooled) == 2
    PairItem.objects.filter(pk__in=[item.pk for item in pooled]).update(
        state=PairItem.State.OPEN, round=pair_round, judges_needed=config.judges_per_item
    )
    answers = {pooled[0].pk: "H", pooled[1].pk: "N"}
    for judge in make_judges(project, config.judges_per_item):
        while (served := queue.serve_next_item(project, judge)) is not None:
            clock.advance(20)
            queue.record_judgement(project, judge, served.item_id, answers[served.item_id])
    assert list(PairItem.objects.filter(pk__in=answers).order_by("id").values_list("state", "label")) == [
        ("consensus", "H"), ("consensus", "N")]

    exported = export_pairs(project, "hades")
    assert exported.split("\n") == [*EXPECTED_LINES, ""]
    assert exported.encode() == ("\n".join(EXPECTED_LINES) + "\n").encode()
