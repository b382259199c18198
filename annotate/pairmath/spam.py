"""Spammer rules for pair judges (HaDes footnote 5), as plain functions over one judge's answers.

A judge is checked once they have ``min_judgements`` answers. Three rules,
each tripped on its own and reported with the figures it measured:

- ``same_label``: every answer is the same label ("?" included);
- ``too_fast``: the mean server-measured seconds per item is under the limit;
- ``disagrees``: more than the limit's share of the judge's H/N votes differ
  from the label the OTHER judges of the same item hold a strict majority
  for. Items where the others have no strict majority are left out, and so
  are the judge's "?" answers: an abstention neither agrees nor disagrees.
  Every answer of the judge is judged; the others' votes are their answers
  among those that decided the item (``consensus.deciding_answers``), as in
  every other figure: an answer past those (an unblocked judge's, after
  others took their places) decides nothing and sways no one's share.

The figures are plain numbers (JSON-ready) so they can be stored with a flag
and compared later ("did they get worse since an admin dismissed the flag?").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from annotate.pairmath.consensus import majority_label
from annotate.percent import share_text

SAME_LABEL = "same_label"
TOO_FAST = "too_fast"
DISAGREES = "disagrees"
RULES = (SAME_LABEL, TOO_FAST, DISAGREES)


@dataclass(frozen=True)
class JudgeAnswer:
    """One counted answer of the judge: their label, the server-measured seconds, the other judges' votes."""

    label: str  # "H", "N" or "?"
    seconds: float | None = None
    others_h: int = 0  # H answers of the other judges among those that decided the same item
    others_n: int = 0


@dataclass(frozen=True)
class SpamLimits:
    min_judgements: int = 10
    min_mean_seconds: float = 10.0
    max_disagreement: float = 0.30


@dataclass(frozen=True)
class SpamFlag:
    rule: str
    figures: dict[str, Any]

    @property
    def explanation(self) -> str:
        return explain(self.rule, self.figures)


def others_majority(answer: JudgeAnswer) -> str:
    """The label the other judges hold a strict majority for, or "" when they have none."""
    return majority_label(["H"] * answer.others_h + ["N"] * answer.others_n)


@dataclass(frozen=True)
class JudgeSummary:
    """What the rules read from a judge's answers: counts and sums (a database can compute them in one row)."""

    judgements: int
    label_counts: dict[str, int]  # answers per label
    timed: int  # answers with a measured time
    seconds_total: float
    compared: int  # H/N votes on items where the others have a strict majority
    differing: int  # of those, votes against that majority

    @property
    def labels(self) -> list[str]:
        return sorted(label for label, count in self.label_counts.items() if count)


def summarize(answers: Sequence[JudgeAnswer]) -> JudgeSummary:
    compared = differing = 0
    for answer in answers:
        majority = others_majority(answer) if answer.label in ("H", "N") else ""
        if majority:
            compared += 1
            differing += answer.label != majority
    timed = [answer.seconds for answer in answers if answer.seconds is not None]
    counts: dict[str, int] = {}
    for answer in answers:
        counts[answer.label] = counts.get(answer.label, 0) + 1
    return JudgeSummary(len(answers), counts, len(timed), float(sum(timed)), compared, differing)


def _summary(answers: Sequence[JudgeAnswer] | JudgeSummary) -> JudgeSummary:
    return answers if isinstance(answers, JudgeSummary) else summarize(answers)


def rounded_beside(value: float, limit: float, digits: int, *, tripped_when: Literal["under", "over"]) -> float:
    """``value`` rounded to ``digits`` decimals, telling the same story about ``limit`` as the exact value.

    The rules compare exact figures (a mean time under its limit, a share over its limit); the stored and shown
    ones are rounded for reading. Plain rounding can land on the limit: a mean of 9.9996 s shows as 10.0 s beside
    a limit of 10.0 s and reads as not under it. When the rounded value would say otherwise than the exact one, it
    is rounded the other way (down or up to ``digits`` decimals), which keeps it on the exact value's side.
    """
    rounded = round(value, digits)
    scale = 10**digits
    down, up = math.floor(value * scale) / scale, math.ceil(value * scale) / scale
    if tripped_when == "under":
        if (value < limit) != (rounded < limit):
            return down if value < limit else up
    elif (value > limit) != (rounded > limit):
        return up if value > limit else down
    return rounded


def same_label_figures(answers: Sequence[JudgeAnswer] | JudgeSummary) -> dict[str, Any]:
    summary = _summary(answers)
    return {"judgements": summary.judgements, "labels": summary.labels}


def too_fast_figures(answers: Sequence[JudgeAnswer] | JudgeSummary, limits: SpamLimits) -> dict[str, Any]:
    summary = _summary(answers)
    mean = summary.seconds_total / summary.timed if summary.timed else None
    return {
        "judgements": summary.judgements,
        "timed": summary.timed,
        "mean_seconds": (rounded_beside(mean, limits.min_mean_seconds, 3, tripped_when="under")
                         if mean is not None else None),
        "limit_seconds": limits.min_mean_seconds,
    }


def disagreement_figures(answers: Sequence[JudgeAnswer] | JudgeSummary, limits: SpamLimits) -> dict[str, Any]:
    summary = _summary(answers)
    return {
        "judgements": summary.judgements,
        "compared": summary.compared,
        "differing": summary.differing,
        # 4 decimals: what share_text shows (2 decimals in percent), never meeting the limit the exact share passes.
        "share": (rounded_beside(summary.differing / summary.compared, limits.max_disagreement, 4,
                                 tripped_when="over")
                  if summary.compared else None),
        "limit_share": limits.max_disagreement,
    }


def spam_flags(answers: Sequence[JudgeAnswer] | JudgeSummary, limits: SpamLimits | None = None) -> list[SpamFlag]:
    """The rules the judge trips, in RULES order; none before ``min_judgements`` answers."""
    limits = limits or SpamLimits()
    summary = _summary(answers)
    if summary.judgements < max(1, limits.min_judgements):
        return []
    tripped = []
    if len(summary.labels) == 1:
        tripped.append(SpamFlag(SAME_LABEL, {"judgements": summary.judgements, "label": summary.labels[0]}))
    # The rules compare the exact figures; the stored ones are rounded for reading.
    if summary.timed and summary.seconds_total / summary.timed < limits.min_mean_seconds:
        tripped.append(SpamFlag(TOO_FAST, too_fast_figures(summary, limits)))
    if summary.compared and summary.differing / summary.compared > limits.max_disagreement:
        tripped.append(SpamFlag(DISAGREES, disagreement_figures(summary, limits)))
    return tripped


def got_worse(rule: str, before: dict[str, Any], now: dict[str, Any], min_judgements: int) -> bool:
    """Whether figures measured now are worse than ``before`` (those a flag was dismissed with).

    Worse means the rule's measure moved the wrong way over at least
    ``min_judgements`` more answers, so that one more answer of a judge an
    admin has looked at does not raise the same flag again: the same label
    on that many more judgements, a lower mean time, a higher share differing.
    """
    more = int(now.get("judgements", 0)) - int(before.get("judgements", 0))
    if more < max(1, min_judgements):
        return False
    if rule == SAME_LABEL:
        return now.get("label") == before.get("label")
    if rule == TOO_FAST:
        return _number(now, "mean_seconds") < _number(before, "mean_seconds", default=float("inf"))
    if rule == DISAGREES:
        return _number(now, "share") > _number(before, "share", default=float("-inf"))
    raise ValueError(f"unknown spammer rule {rule!r}; known: {', '.join(RULES)}")


def _number(figures: dict[str, Any], key: str, default: float = float("nan")) -> float:
    value = figures.get(key)
    return float(value) if isinstance(value, int | float) else default


def explain(rule: str, figures: dict[str, Any]) -> str:
    """The flag as a sentence with its figures, for the flags page and the API."""
    n = figures.get("judgements", 0)
    if rule == SAME_LABEL:
        return f"answered {figures.get('label')!s} on every one of {n} judgements"
    if rule == TOO_FAST:
        mean, limit = figures.get("mean_seconds"), figures.get("limit_seconds")
        shown = f"{mean} s"
        if isinstance(mean, int | float) and isinstance(limit, int | float) and mean >= limit:
            # Figures stored before rounded_beside, rounded onto the limit: the exact mean was under it.
            shown = f"{mean} s (rounded; the exact mean is under the limit)"
        return (
            f"mean time per item {shown} over {figures.get('timed', n)} timed judgements, "
            f"under the limit of {limit} s"
        )
    if rule == DISAGREES:
        share = figures.get("share")
        percent = share_text(share) if isinstance(share, int | float) else "?"
        limit = figures.get("limit_share")
        limit_percent = f"{limit * 100:g}%" if isinstance(limit, int | float) else "?"  # a setting: as it was given
        return (
            f"{figures.get('differing')} of {figures.get('compared')} votes ({percent}) differ from the other "
            f"judges' majority on items where they have one; the limit is {limit_percent}"
        )
    raise ValueError(f"unknown spammer rule {rule!r}; known: {', '.join(RULES)}")
