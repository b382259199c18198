"""Agreement figures of perturbed-pair judging (HaDes section 3): consensus, >= 80%, unanimous, Krippendorff's alpha.

Input: one list of answers ("H", "N" or "?") per item, the answers that
decided the item (``consensus.deciding_answers``: its first counted answers,
as many as it needed; later ones decide nothing). Only items whose judging
is finished belong here: items that reached consensus or ended with no
consensus at the maximum number of judges. Items still being judged would pull every share down
while their judges work, and items labelled on import have no votes. The
caller (the service) picks those items; this module counts them all.

Valid votes are H and N; "?" is a judge who abstained and counts as missing.
Per item, with h and n its valid votes:
- consensus: a strict majority of the valid votes (h > n or n > h), the
  rule ``consensus.outcome`` applies to a finished item's answers;
- >= 80% agreement: the majority label holds at least 80% of the valid
  votes (with 4 votes that takes 4 of 4; with 5, 4 of 5);
- unanimous: at least one valid vote, and all of them the same label;
- no consensus: the rest (a tie, or no valid vote at all).
Shares are percentages of the items, rounded to 2 decimals.

Alpha is Krippendorff's alpha, nominal, over items x judges with "?" and
absent judges missing, from the ``krippendorff`` package. Only counts per
item matter for it, so it is computed from the items' H/N vote counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import krippendorff
import numpy as np

ANSWERS = ("H", "N", "?")


@dataclass(frozen=True)
class AgreementFigures:
    alpha: float | None
    reason: str | None  # why alpha is None
    items: int
    consensus: float | None  # percent of items; None when there is no item
    agree80: float | None
    unanimous: float | None
    no_consensus: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "items": self.items,
            "consensus": self.consensus,
            "agree80": self.agree80,
            "unanimous": self.unanimous,
            "no_consensus": self.no_consensus,
            "reason": self.reason,
        }


def _percent(count: int, total: int) -> float | None:
    return round(100 * count / total, 2) if total else None


def vote_counts(answers_per_item: Sequence[Sequence[str]]) -> np.ndarray:
    """items x (H, N) counts of valid votes; ValueError naming the item and answer for anything but H, N or ?."""
    counts = np.zeros((len(answers_per_item), 2), dtype=int)
    for index, answers in enumerate(answers_per_item):
        for answer in answers:
            if answer not in ANSWERS:
                raise ValueError(f"item {index}: answer {answer!r} is not one of H, N, ?")
        counts[index] = (list(answers).count("H"), list(answers).count("N"))
    return counts


def nominal_alpha(counts: np.ndarray) -> tuple[float | None, str | None]:
    """Krippendorff's alpha, nominal, from items x (H, N) counts; (None, reason) when it cannot be computed.

    DESIGN.md's rule, as span alpha and judge-vs-people alpha apply it: alpha is
    undefined only when no item has two valid votes or only one label occurs.
    One pairable item with both labels is enough: the package answers for it.
    """
    pairable = counts[counts.sum(axis=1) >= 2]
    if not len(pairable):
        return None, "no item has two or more valid (H/N) votes: there is no pair of votes to compare"
    totals = pairable.sum(axis=0)
    if (totals == 0).any():
        only = "H" if totals[0] else "N"
        return None, f"every valid vote is {only}: with no variation there is no disagreement to measure"
    try:
        value = float(
            krippendorff.alpha(value_counts=pairable, value_domain=[0, 1], level_of_measurement="nominal")
        )
    except (ValueError, ZeroDivisionError, FloatingPointError) as error:
        return None, f"krippendorff could not compute alpha: {error}"
    if not math.isfinite(value):
        return None, "the expected disagreement is zero"
    return value, None


def agreement_figures(answers_per_item: Sequence[Sequence[str]]) -> AgreementFigures:
    """The figures over finished items, each given as its counted judges' answers (see the module docstring)."""
    counts = vote_counts(answers_per_item)
    h, n = counts[:, 0], counts[:, 1]
    valid = h + n
    majority = np.maximum(h, n)
    consensus = int((h != n).sum())
    # 5 * majority >= 4 * valid is majority / valid >= 0.8 without float rounding.
    agree80 = int(((valid > 0) & (5 * majority >= 4 * valid)).sum())
    unanimous = int(((valid > 0) & (majority == valid)).sum())
    items = len(counts)
    alpha, reason = nominal_alpha(counts)
    if not items:
        reason = "no item has finished judging (consensus or no consensus) yet"
    return AgreementFigures(
        alpha=alpha,
        reason=reason,
        items=items,
        consensus=_percent(consensus, items),
        agree80=_percent(agree80, items),
        unanimous=_percent(unanimous, items),
        no_consensus=_percent(items - consensus, items),
    )
