"""The judge-vs-people figures (judging/people.py): alpha against the krippendorff package on hand-built
matrices, and small cases worked out by hand."""

from __future__ import annotations

from typing import Any

import krippendorff
import numpy as np
import pytest

from judging.people import (
    AuditRating,
    alpha_among_auditors,
    alpha_with_judge,
    confusion_matrix,
    flags_confirmed,
    judge_level,
    people_figures,
    residuals,
)

NAN = np.nan


def ratings(rows: list[tuple[str, str, int, float]]) -> list[AuditRating]:
    return [AuditRating(item, auditor, score, judge) for item, auditor, score, judge in rows]


# Three auditors over five items (one item audited once), and a judge.
SCENE = ratings([
    ("a", "ann", 2, 1), ("a", "ben", 1, 1), ("a", "cat", 2, 1),
    ("b", "ann", 4, 3), ("b", "ben", 5, 3),
    ("c", "ben", 3, 4), ("c", "cat", 4, 4),
    ("d", "ann", 5, 5), ("d", "cat", 5, 5),
    ("e", "ann", 1, 2),
])
# The same ratings as reliability matrices written out by hand (rows: ann, ben, cat, [judge]; columns a..e).
AUDITORS = [
    [2, 4, NAN, 5, 1],
    [1, 5, 3, NAN, NAN],
    [2, NAN, 4, 5, NAN],
]
JUDGE_ROW = [1, 3, 4, 5, 2]


@pytest.mark.parametrize("level", ["ordinal", "interval"])
def test_alpha_with_the_judge_equals_krippendorff_on_the_hand_built_matrix(level: str) -> None:
    expected = krippendorff.alpha(reliability_data=np.array([*AUDITORS, JUDGE_ROW], dtype=float),
                                  level_of_measurement=level, value_domain=[1, 2, 3, 4, 5])
    found = alpha_with_judge(SCENE, level)
    assert found.value == pytest.approx(expected)
    assert found.items == 5 and found.raters == 4


@pytest.mark.parametrize("level", ["ordinal", "interval"])
def test_alpha_among_auditors_equals_krippendorff_and_drops_items_with_one_auditor(level: str) -> None:
    # Item e has one auditor: it cannot be paired, so it is left out (the matrix without its column).
    matrix = np.array(AUDITORS, dtype=float)[:, :4]
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level, value_domain=[1, 2, 3, 4, 5])
    found = alpha_among_auditors(SCENE, level)
    assert found.value == pytest.approx(expected)
    assert found.items == 4 and found.raters == 3


def test_nli_figures_enter_interval_alpha_as_they_are_and_ordinal_alpha_rounded() -> None:
    # Judge p = 0.3, 0.6, 0.9 -> 1 + 4p = 2.2, 3.4, 4.6 -> levels 2, 3, 5.
    figures = [1 + 4 * p for p in (0.3, 0.6, 0.9)]
    rows = ratings([("x", "ann", 2, figures[0]), ("y", "ann", 4, figures[1]), ("z", "ann", 5, figures[2])])
    interval = krippendorff.alpha(reliability_data=np.array([[2, 4, 5], figures]), level_of_measurement="interval")
    ordinal = krippendorff.alpha(reliability_data=np.array([[2, 4, 5], [2, 3, 5]], dtype=float),
                                 level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5])
    assert alpha_with_judge(rows, "interval").value == pytest.approx(interval)
    assert alpha_with_judge(rows, "ordinal").value == pytest.approx(ordinal)


def test_hand_worked_alpha_is_a_quarter() -> None:
    # Items A (auditor 1, judge 3) and B (3, 5). Interval: Do = (8 + 8) / 4 = 4, De = 64 / 12, alpha = 1 - 0.75.
    # Ordinal: n1 = 1, n3 = 2, n5 = 1; d(1,3) = d(3,5) = 1.5^2, d(1,5) = 3^2; Do = 2.25, De = 36 / 12; alpha 0.25.
    rows = ratings([("A", "ann", 1, 3), ("B", "ann", 3, 5)])
    assert alpha_with_judge(rows, "interval").value == pytest.approx(0.25)
    assert alpha_with_judge(rows, "ordinal").value == pytest.approx(0.25)


def test_perfect_agreement_is_one() -> None:
    rows = ratings([("A", "ann", 2, 2), ("A", "ben", 2, 2), ("B", "ann", 5, 5), ("B", "ben", 5, 5)])
    for level in ("ordinal", "interval"):
        assert alpha_with_judge(rows, level).value == pytest.approx(1.0)
        assert alpha_among_auditors(rows, level).value == pytest.approx(1.0)


def test_alpha_is_undefined_with_a_reason_never_a_number() -> None:
    one_auditor = ratings([("A", "ann", 2, 3), ("B", "ann", 4, 4)])
    found = alpha_among_auditors(one_auditor, "ordinal")
    assert found.value is None and "fewer than two auditors" in found.reason

    nobody_pairs = ratings([("A", "ann", 2, 3), ("B", "ben", 4, 4)])
    found = alpha_among_auditors(nobody_pairs, "interval")
    assert found.value is None and "two or more" in found.reason

    all_fours = ratings([("A", "ann", 4, 4), ("B", "ann", 4, 4)])
    found = alpha_with_judge(all_fours, "interval")
    assert found.value is None and "every score is 4" in found.reason

    found = alpha_with_judge([], "ordinal")
    assert found.value is None and found.reason


def test_judge_levels_round_halves_up() -> None:
    assert [judge_level(value) for value in (1.0, 1.49, 1.5, 2.5, 3.4, 3.5, 4.99, 5.0)] == [1, 1, 2, 3, 3, 4, 5, 5]
    assert judge_level(1 + 4 * 0.625) == 4  # 3.5 exactly


def test_confusion_matrix_counts_one_per_item_and_auditor_rows_judge_columns_auditor() -> None:
    rows = ratings([
        ("A", "ann", 4, 2), ("A", "ben", 5, 2),  # judge 2: auditor 4 and 5
        ("B", "ann", 2, 2),  # judge 2, auditor 2
        ("C", "ann", 1, 1 + 4 * 0.625),  # NLI figure 3.5 -> level 4, auditor 1
    ])
    matrix = confusion_matrix(rows)
    expected = [[0] * 5 for _ in range(5)]
    expected[1][3] = 1
    expected[1][4] = 1
    expected[1][1] = 1
    expected[3][0] = 1
    assert matrix == expected
    assert sum(map(sum, matrix)) == 4


def test_residual_is_auditor_minus_judge() -> None:
    # A harsh judge (2) and auditors who found the output faithful (4, 5): +2 and +3.
    harsh = residuals(ratings([("A", "ann", 4, 2), ("A", "ben", 5, 2)]))
    assert harsh == {"mean": pytest.approx(2.5), "mean_absolute": pytest.approx(2.5), "pairs": 2}
    mixed = residuals(ratings([("A", "ann", 1, 3), ("B", "ann", 5, 4)]))  # -2 and +1
    assert mixed["mean"] == pytest.approx(-0.5)
    assert mixed["mean_absolute"] == pytest.approx(1.5)
    assert residuals([]) == {"mean": None, "mean_absolute": None, "pairs": 0}


def test_a_flag_is_confirmed_when_the_auditors_median_is_at_most_the_threshold() -> None:
    rows = ratings([
        ("A", "ann", 2, 2), ("A", "ben", 4, 2), ("A", "cat", 3, 2),  # median 3 <= 3: confirmed
        ("B", "ann", 3, 1), ("B", "ben", 4, 1),  # median 3.5 > 3: not confirmed
        ("C", "ann", 1, 3),  # median 1: confirmed
        ("D", "ann", 1, 5),  # not flagged by the judge: not counted
    ])
    found = flags_confirmed(rows, flagged={"A", "B", "C", "Z"}, flag_at_most=3)  # Z was never audited
    assert found == {"share": pytest.approx(2 / 3), "confirmed": 2, "flagged": 3, "reason": None}
    none = flags_confirmed(rows, flagged=set(), flag_at_most=3)
    assert none["share"] is None and none["reason"]


def test_people_figures_put_everything_together_with_reasons() -> None:
    figures = people_figures(SCENE, flagged={"a", "e"}, flag_at_most=3)
    assert figures["items"] == 5 and figures["auditors"] == 3 and figures["pairs"] == 10
    assert figures["alpha_interval_with_judge"] == pytest.approx(alpha_with_judge(SCENE, "interval").value)
    assert figures["alpha_ordinal_auditors"] == pytest.approx(alpha_among_auditors(SCENE, "ordinal").value)
    assert figures["alpha_ordinal_auditors_items"] == 4
    assert figures["flags_confirmed"] == pytest.approx(1.0)  # a: median 2; e: 1
    assert figures["reasons"] == {}
    assert sum(map(sum, figures["confusion"])) == 10

    lonely = people_figures(ratings([("A", "ann", 2, 2)]), flagged=set(), flag_at_most=3)
    assert lonely["alpha_ordinal_auditors"] is None
    assert set(lonely["reasons"]) == {"alpha_ordinal_auditors", "alpha_interval_auditors", "alpha_ordinal_with_judge",
                                      "alpha_interval_with_judge", "flags_confirmed"}


def test_bad_scores_are_refused_with_the_item_named() -> None:
    with pytest.raises(ValueError, match="item A"):
        alpha_with_judge(ratings([("A", "ann", 7, 3)]), "ordinal")
    with pytest.raises(ValueError, match="item B"):
        alpha_with_judge(ratings([("B", "ann", 3, 0.2)]), "interval")
    with pytest.raises(ValueError, match="level"):
        alpha_with_judge(ratings([("B", "ann", 3, 3)]), "nominal")


# ----------------------------------------------------------------------------- from the database


@pytest.mark.django_db
def test_judge_vs_people_reads_answered_audits_and_the_judges_latest_judgements(
    batch: Any, admin_user: Any, alice: Any
) -> None:
    from django.utils import timezone

    from judging.models import Audit, AuditItem, Judge, Judgement, JudgeRun
    from judging.services.people import judge_vs_people

    project = batch.project
    s0, s1, s2 = batch.samples.order_by("position")
    judge = Judge.objects.create(project=project, name="hhem", kind=Judge.Kind.NLI, nli_model_path="/srv/models/x")
    old = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE)
    Judgement.objects.create(run=old, sample=s0, status="ok", probability=0.99)  # replaced by the later run
    new = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE)
    Judgement.objects.create(run=new, sample=s0, status="ok", probability=0.25)  # 1 + 4p = 2.0
    Judgement.objects.create(run=new, sample=s1, status="ok", probability=0.875)  # 4.5 -> level 5
    Judgement.objects.create(run=new, sample=s2, status="parse_error", raw="?")  # failed: left out
    now = timezone.now()
    for sample, scores in ((s0, (2, 1)), (s1, (4, None)), (s2, (3, 3))):
        item = AuditItem.objects.create(project=project, sample=sample, reason="test")
        for auditor, score in zip((admin_user, alice), scores, strict=True):
            Audit.objects.create(item=item, auditor=auditor, score=score, served_at=now)

    figures = judge_vs_people(project, judge)
    hand = ratings([(s0.pk, admin_user.pk, 2, 2.0), (s0.pk, alice.pk, 1, 2.0), (s1.pk, admin_user.pk, 4, 4.5)])
    everyone = [*hand, AuditRating(s2.pk, admin_user.pk, 3, None), AuditRating(s2.pk, alice.pk, 3, None)]
    assert figures["items"] == 2 and figures["pairs"] == 3 and figures["items_without_judge_score"] == 1
    for level in ("ordinal", "interval"):
        assert figures[f"alpha_{level}_with_judge"] == pytest.approx(alpha_with_judge(hand, level).value)
        assert figures[f"alpha_{level}_auditors"] == pytest.approx(alpha_among_auditors(everyone, level).value)
    # Among auditors alone the judge plays no part: s0 (2, 1) and s2 (3, 3) pair, though the judge failed on s2.
    # Interval by hand: Do = 2 / 4, De = 22 / 12 (values 1, 2, 3, 3), alpha = 1 - 0.5 * 12 / 22 = 8 / 11.
    assert figures["alpha_interval_auditors"] == pytest.approx(8 / 11)
    assert figures["alpha_interval_auditors_items"] == 2
    assert figures["confusion"][1][1] == 1 and figures["confusion"][1][0] == 1 and figures["confusion"][4][3] == 1
    assert figures["mean_residual"] == pytest.approx(((2 - 2) + (1 - 2) + (4 - 4.5)) / 3)
    # Flagged (p < 0.5): s0 only; its auditors' median 1.5 <= 3: confirmed.
    assert (figures["flags_confirmed"], figures["flags_audited"]) == (1.0, 1)
    assert figures["probability"] is True and figures["judge"]["name"] == "hhem"
