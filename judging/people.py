"""A judge measured against the people who audited its items: alpha, confusion, residuals, confirmed flags.

Pure: no Django imports. The rows are plain values that judging/services/people.py
reads from the database: one ``AuditRating`` per answered audit, (item,
auditor, the auditor's score 1..5, the judge's 1-5 figure for that item, or
None where the judge has none: it failed on the item or never judged it).

Every figure that sets the judge against people is over the ratings that have
a judge figure. Alpha among the auditors alone is about the people only: it
takes every answered audit, whether or not the judge scored the item.

The judge's figure is its rubric score, or 1 + 4p for an NLI judge (our
scaling; the paper scales but gives no formula). Interval alpha and the
residuals use that figure as it is; ordinal alpha and the confusion matrix
need one of the five levels, so an NLI figure is rounded to the nearest level
(halves up: 3.5 -> 4). A rubric score is already a level.

Alpha always comes from the ``krippendorff`` package; this module builds its
reliability matrix (raters x items, NaN where a rater did not rate an item)
and says why when alpha is undefined instead of inventing a number.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import krippendorff
import numpy as np

LEVELS = (1, 2, 3, 4, 5)
ALPHA_LEVELS = ("ordinal", "interval")
JUDGE = "judge"  # the judge's row in the reliability matrix
NO_JUDGE_FIGURE = "no audited item has a score from this judge"


@dataclass(frozen=True)
class AuditRating:
    """One auditor's score of one audited item, beside the judge's figure for the same item."""

    item: Hashable
    auditor: Hashable
    auditor_score: int  # 1..5
    judge_score: float | None  # rubric score 1..5, or 1 + 4p for an NLI judge; None: the judge has no figure


@dataclass(frozen=True)
class Alpha:
    value: float | None
    reason: str | None  # why value is None
    items: int  # items that entered (two or more ratings)
    raters: int


def judge_level(figure: float) -> int:
    """The rubric level nearest to a judge's 1-5 figure, halves rounded up (round() would send 2.5 to 2)."""
    return min(5, max(1, math.floor(figure + 0.5)))


def _check(ratings: Sequence[AuditRating]) -> None:
    for rating in ratings:
        if rating.auditor_score not in LEVELS or isinstance(rating.auditor_score, bool):
            raise ValueError(f"auditor {rating.auditor} scored item {rating.item} {rating.auditor_score!r}, not 1..5")
        figure = rating.judge_score
        if figure is None:
            continue
        if isinstance(figure, bool) or not (isinstance(figure, int | float) and 1.0 <= figure <= 5.0):
            raise ValueError(f"the judge's figure for item {rating.item} is {rating.judge_score!r}, not within 1..5")


def _check_level(level: str) -> None:
    if level not in ALPHA_LEVELS:
        raise ValueError(f"level must be one of {', '.join(ALPHA_LEVELS)}, not {level!r}")


def _alpha(matrix: np.ndarray, level: str) -> Alpha:
    """Krippendorff's alpha of a raters x items matrix (NaN = not rated), or why it is undefined."""
    raters = matrix.shape[0]
    pairable = (~np.isnan(matrix)).sum(axis=0) >= 2
    items = int(pairable.sum())
    if items == 0:
        return Alpha(None, "no item has scores from two or more raters", 0, raters)
    matrix = matrix[:, pairable]
    present = np.unique(matrix[~np.isnan(matrix)])
    if len(present) < 2:
        return Alpha(None, f"every score is {present[0]:g}: no disagreement is possible to measure", items, raters)
    # Ordinal distances depend on which levels exist, so the five levels are named; interval values may be
    # 1 + 4p figures, which the package collects from the data.
    domain = LEVELS if level == "ordinal" else None
    value = float(krippendorff.alpha(reliability_data=matrix, value_domain=domain, level_of_measurement=level))
    if not math.isfinite(value):
        return Alpha(None, "expected disagreement is zero", items, raters)
    return Alpha(value, None, items, raters)


def _matrix(rows: dict[Hashable, dict[Hashable, float]], items: list[Hashable]) -> np.ndarray:
    column = {item: index for index, item in enumerate(items)}
    matrix = np.full((len(rows), len(items)), np.nan)
    for row, scores in enumerate(rows.values()):
        for item, score in scores.items():
            matrix[row, column[item]] = score
    return matrix


def _auditor_rows(ratings: Sequence[AuditRating]) -> dict[Hashable, dict[Hashable, float]]:
    rows: dict[Hashable, dict[Hashable, float]] = {}
    for rating in ratings:
        rows.setdefault(rating.auditor, {})[rating.item] = float(rating.auditor_score)
    return rows


def _items(ratings: Sequence[AuditRating]) -> list[Hashable]:
    return list(dict.fromkeys(rating.item for rating in ratings))


def _judged(ratings: Iterable[AuditRating]) -> list[AuditRating]:
    """The ratings of items the judge has a figure for: the only ones that can set it against people."""
    return [rating for rating in ratings if rating.judge_score is not None]


def alpha_with_judge(ratings: Sequence[AuditRating], level: str) -> Alpha:
    """Alpha over the audited items with the judge as one more rater beside the auditors (items the judge has no
    figure for are left out)."""
    _check(ratings)
    _check_level(level)
    ratings = _judged(ratings)
    if not ratings:
        return Alpha(None, NO_JUDGE_FIGURE, 0, 0)
    rows = _auditor_rows(ratings)
    figure = {rating.item: float(rating.judge_score) for rating in ratings if rating.judge_score is not None}
    rows[(JUDGE,)] = {  # a tuple key: no auditor id can collide with it
        item: float(judge_level(value)) if level == "ordinal" else float(value) for item, value in figure.items()
    }
    return _alpha(_matrix(rows, _items(ratings)), level)


def alpha_among_auditors(ratings: Sequence[AuditRating], level: str) -> Alpha:
    """Alpha among the auditors alone, over the items that two or more of them scored, whatever the judge did."""
    _check(ratings)
    _check_level(level)
    rows = _auditor_rows(ratings)
    if len(rows) < 2:
        return Alpha(None, f"fewer than two auditors have answered ({len(rows)})", 0, len(rows))
    return _alpha(_matrix(rows, _items(ratings)), level)


def confusion_matrix(ratings: Iterable[AuditRating]) -> list[list[int]]:
    """5 x 5 counts, one per (item, auditor): row = the judge's level 1..5, column = the auditor's score 1..5."""
    counts = [[0] * len(LEVELS) for _ in LEVELS]
    for rating in ratings:
        if rating.judge_score is not None:
            counts[judge_level(rating.judge_score) - 1][rating.auditor_score - 1] += 1
    return counts


def residuals(ratings: Sequence[AuditRating]) -> dict[str, Any]:
    """Mean of (auditor's score - judge's figure) over (item, auditor) pairs, and of its absolute value.

    Positive: the auditors found the outputs more faithful than the judge did (the judge is harsher).
    """
    differences = [rating.auditor_score - rating.judge_score for rating in ratings if rating.judge_score is not None]
    if not differences:
        return {"mean": None, "mean_absolute": None, "pairs": 0}
    return {
        "mean": statistics.fmean(differences),
        "mean_absolute": statistics.fmean(abs(difference) for difference in differences),
        "pairs": len(differences),
    }


def flags_confirmed(ratings: Sequence[AuditRating], flagged: Collection[Hashable], flag_at_most: int) -> dict[str, Any]:
    """Share of the judge's flagged, audited items that the auditors confirmed.

    A flagged item is confirmed when the median of its auditors' scores is at
    most ``flag_at_most`` (the project's LLM flag threshold): the people, too,
    find it unfaithful enough to flag. With an even number of auditors the
    median is the mean of the middle two (scores 3 and 4 give 3.5: not
    confirmed at 3).
    """
    by_item: dict[Hashable, list[int]] = {}
    for rating in _judged(ratings):
        by_item.setdefault(rating.item, []).append(rating.auditor_score)
    audited = [item for item in by_item if item in flagged]
    confirmed = sum(statistics.median(by_item[item]) <= flag_at_most for item in audited)
    if not audited:
        return {"share": None, "confirmed": 0, "flagged": 0, "reason": "no flagged item has been audited"}
    return {"share": confirmed / len(audited), "confirmed": confirmed, "flagged": len(audited), "reason": None}


def median_example(flag_at_most: int) -> str:
    """How two auditors' scores confirm a flag or not at the project's threshold, in words for the page: the pair
    one apart across the threshold, whose median (their mean) falls half a point past it."""
    if flag_at_most >= 5:
        return "every median is at most 5, so at this threshold every audited flag is confirmed"
    return (f"{flag_at_most} and {flag_at_most + 1} give {flag_at_most}.5, not confirmed; "
            f"{flag_at_most} and {flag_at_most} give {flag_at_most}, confirmed")


def people_figures(
    ratings: Sequence[AuditRating], *, flagged: Collection[Hashable], flag_at_most: int
) -> dict[str, Any]:
    """Every judge-vs-people figure (see the functions above for each).

    ``ratings`` is every answered audit; those without a judge figure count
    only in the auditors-alone alpha. ``items``, ``auditors`` and ``pairs``
    count what the judge is set against: the ratings with a judge figure.
    """
    _check(ratings)
    judged = _judged(ratings)
    figures: dict[str, Any] = {
        "items": len(_items(judged)),
        "auditors": len(_auditor_rows(judged)),
        "pairs": len(judged),
        "reasons": {},
    }
    for level in ALPHA_LEVELS:
        for name, alpha in (
            (f"alpha_{level}_with_judge", alpha_with_judge(ratings, level)),
            (f"alpha_{level}_auditors", alpha_among_auditors(ratings, level)),
        ):
            figures[name] = alpha.value
            figures[f"{name}_items"] = alpha.items
            if alpha.reason is not None:
                figures["reasons"][name] = alpha.reason
    figures["confusion"] = confusion_matrix(ratings)
    residual = residuals(ratings)
    figures["mean_residual"] = residual["mean"]
    figures["mean_absolute_residual"] = residual["mean_absolute"]
    if residual["mean"] is None:  # said, like every other undefined figure (the API gives reasons beside nulls)
        figures["reasons"]["mean_residual"] = figures["reasons"]["mean_absolute_residual"] = NO_JUDGE_FIGURE
    confirmed = flags_confirmed(ratings, flagged, flag_at_most)
    figures["flags_confirmed"] = confirmed["share"]
    figures["flags_audited"] = confirmed["flagged"]
    figures["flags_confirmed_count"] = confirmed["confirmed"]
    if confirmed["reason"] is not None:
        figures["reasons"]["flags_confirmed"] = confirmed["reason"]
    return figures
