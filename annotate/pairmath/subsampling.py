"""The subsampling ratio R of HaDes (eq. 1, appendix C): how much of each predicted class to keep for a balanced round.

The detector's confusion counts on last round's consensus items, with H as
the positive class: TP (H predicted H), FP (N predicted H), TN (N predicted
N), FN (H predicted N). Keeping a share ``r`` of the predicted-H items and
all predicted-N ones gives, in expectation, ``r*TP + FN`` actual H and
``r*FP + TN`` actual N; they are equal when

    R = (TN - FN) / (TP - FP).

The paper writes the same number from alpha = TP/(TP+FN) (recall of H),
beta = TN/(TN+FP) (recall of N) and gamma = TP/(TP+FP) (precision of H):

    R = (-2*alpha*beta*gamma + alpha*beta + beta*gamma + alpha*gamma - gamma)
        / ((2*gamma - 1) * alpha * (1 - beta))

Both are computed and shown side by side; R from the counts decides, because
the closed form is 0/0 in cases the counts still settle (no false positive,
no true positive).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Literal

Action = Literal[
    "keep_share_of_h",
    "keep_share_of_n",
    "no_subsampling_gamma_half",
    "keep_no_h",
    "keep_all",
    "random_too_few",
    "random_undefined",
]

# Actions under which the round is drawn at random: R promises nothing about the balance.
RANDOM_ACTIONS = ("random_too_few", "random_undefined")


@dataclass(frozen=True)
class SubsamplingRatio:
    """R, the closed form beside it, the rates it comes from, and what the round does with it.

    ``keep_predicted_h`` and ``keep_predicted_n`` are the shares (0..1) of
    the predicted-H and predicted-N items to keep; ``action`` is a short code
    and ``reason`` says the case in words.
    """

    tp: int
    fp: int
    tn: int
    fn: int
    r: float | None
    closed_form: float | None
    alpha: float | None
    beta: float | None
    gamma: float | None
    keep_predicted_h: float
    keep_predicted_n: float
    action: Action
    reason: str | None

    def as_dict(self) -> dict[str, Any]:
        """The keys `subsampling_ratio --json` prints (and a round stores)."""
        return {
            "R": self.r,
            "closed_form": self.closed_form,
            "alpha": self.alpha,
            "beta": self.beta,
            "gamma": self.gamma,
            "keep_predicted_h": self.keep_predicted_h,
            "keep_predicted_n": self.keep_predicted_n,
            "reason": self.reason,
            "action": self.action,
            "tp": self.tp,
            "fp": self.fp,
            "tn": self.tn,
            "fn": self.fn,
        }

    @property
    def counts_formula(self) -> float | None:
        """(TN - FN)/(TP - FP) as computed, None when TP = FP. It is R except where R is set to 0 (keep_no_h:
        the formula is negative there) and where R is undefined (a random round)."""
        if self.tp == self.fp:
            return None
        return (self.tn - self.fn) / (self.tp - self.fp) if self.tn != self.fn else 0.0

    @property
    def closed_form_note(self) -> str | None:
        """Why the closed form has no value, or None when it has one."""
        return closed_form_note(self.alpha, self.beta, self.gamma)

    def promised_h_share(self) -> float | None:
        """Share of H the kept items should have in expectation; None when the round is random (nothing promised)."""
        if self.action in RANDOM_ACTIONS:
            return None
        return promised_h_share(self.tp, self.fp, self.tn, self.fn, self.keep_predicted_h, self.keep_predicted_n)


def _share(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def closed_form(alpha: float | None, beta: float | None, gamma: float | None) -> float | None:
    """HaDes eq. 1 from the three rates; None when a rate is undefined or the denominator is 0."""
    if alpha is None or beta is None or gamma is None:
        return None
    denominator = (2 * gamma - 1) * alpha * (1 - beta)
    if denominator == 0:
        return None
    numerator = -2 * alpha * beta * gamma + alpha * beta + beta * gamma + alpha * gamma - gamma
    return numerator / denominator


def closed_form_note(alpha: float | None, beta: float | None, gamma: float | None) -> str | None:
    """Say in words why the closed form is undefined (None when it is defined)."""
    if alpha is None or beta is None or gamma is None:
        undefined = [
            f"{name} is undefined ({why})"
            for name, value, why in (
                ("alpha", alpha, "TP+FN = 0"),
                ("beta", beta, "TN+FP = 0"),
                ("gamma", gamma, "TP+FP = 0"),
            )
            if value is None
        ]
        return "The closed form has no value: " + " and ".join(undefined) + "."
    zero = []
    if gamma == 0.5:
        zero.append("2*gamma - 1 = 0 (TP = FP)")
    if alpha == 0:
        zero.append("alpha = 0 (TP = 0)")
    if beta == 1:
        zero.append("1 - beta = 0 (FP = 0)")
    if zero:
        return "The closed form's denominator (2*gamma - 1)*alpha*(1 - beta) is 0: " + ", ".join(zero) + "."
    return None


def promised_h_share(
    tp: int, fp: int, tn: int, fn: int, keep_predicted_h: float, keep_predicted_n: float
) -> float | None:
    """Expected share of actual H among the kept items, if the detector errs on the pool as it did on these counts.

    Kept H = keep_h*TP + keep_n*FN, kept N = keep_h*FP + keep_n*TN. None
    when nothing would be kept.
    """
    kept_h = keep_predicted_h * tp + keep_predicted_n * fn
    kept_n = keep_predicted_h * fp + keep_predicted_n * tn
    if kept_h + kept_n == 0:
        return None
    return kept_h / (kept_h + kept_n)


def selection_h_share(tp: int, fp: int, tn: int, fn: int, predicted_h: int, predicted_n: int) -> float | None:
    """Expected share of actual H among ``predicted_h`` + ``predicted_n`` chosen items, if the detector errs on them
    as it did on these counts: each predicted-H item is H with chance gamma = TP/(TP+FP), each predicted-N item with
    chance FN/(FN+TN).

    R balances the counted items, whose predicted mix is (TP+FP) : (TN+FN); a
    selection drawn from a pool of another mix has this share instead, the
    promised one only when its mix is the counts' kept mix. None when nothing
    is chosen, or when a group with chosen items has no counted item to give
    its rate (TP+FP = 0 or TN+FN = 0).
    """
    if predicted_h + predicted_n == 0:
        return None
    if (predicted_h and tp + fp == 0) or (predicted_n and tn + fn == 0):
        return None
    expected_h = (predicted_h * tp / (tp + fp) if predicted_h else 0.0) + (
        predicted_n * fn / (fn + tn) if predicted_n else 0.0
    )
    return expected_h / (predicted_h + predicted_n)


def _share_words(share: float) -> str:
    return f"{100 * share:.2f}%"


def selection_balance(
    ratio: SubsamplingRatio, pool_h: int, pool_n: int, drawn_h: int, drawn_n: int
) -> dict[str, Any] | None:
    """The H share expected of the items a round drew, beside the one R promised, and why the two differ.

    ``pool_h``/``pool_n``: the items of each predicted class that passed the
    filters (what R thins out); ``drawn_h``/``drawn_n``: those drawn. R
    balances the counted items, whose predicted mix is (TP+FP) : (TN+FN); when
    the pool's mix differs, so does the share to expect of this selection
    (``selection_h_share``). None for a random round (nothing promised).
    """
    promised = ratio.promised_h_share()
    if promised is None:
        return None
    tp, fp, tn, fn = ratio.tp, ratio.fp, ratio.tn, ratio.fn
    counted_h, counted_n = tp + fp, tn + fn
    expected = selection_h_share(tp, fp, tn, fn, drawn_h, drawn_n)
    drawn = drawn_h + drawn_n
    same_mix = pool_h * counted_n == pool_n * counted_h
    mix = (
        f"R balances the counted items, whose predicted mix is {counted_h} H : {counted_n} N (TP+FP : TN+FN); "
        f"the pool after the filters holds {pool_h} predicted H : {pool_n} predicted N, "
        + ("the same mix." if same_mix else "a different mix, so this selection need not reach the promised share.")
    )
    if expected is None:
        if not drawn:
            why = "No item was drawn, so there is no share to expect."
        else:
            group = "H" if drawn_h and counted_h == 0 else "N"
            why = (f"No share can be expected: no counted item was predicted {group}, so the counts give no rate "
                   f"of H for the drawn predicted-{group} items.")
        explanation = f"{mix} {why}"
    else:
        terms = []
        if drawn_h:
            terms.append(f"{drawn_h} × {tp}/{counted_h}")
        if drawn_n:
            terms.append(f"{drawn_n} × {fn}/{counted_n}")
        explanation = (
            f"{mix} Expected for the {drawn} drawn items ({drawn_h} predicted H, {drawn_n} predicted N), if the "
            f"detector errs on the pool as on the counts: each predicted-H item is H with chance TP/(TP+FP) and each "
            f"predicted-N item with chance FN/(FN+TN), ({' + '.join(terms)}) / {drawn} = {_share_words(expected)} H, "
            f"against the promised {_share_words(promised)}."
        )
    return {
        "promised_h_share": promised,
        "expected_h_share": expected,
        "counted_predicted_h": counted_h,
        "counted_predicted_n": counted_n,
        "pool_predicted_h": pool_h,
        "pool_predicted_n": pool_n,
        "drawn_predicted_h": drawn_h,
        "drawn_predicted_n": drawn_n,
        "explanation": explanation,
    }


def _check_count(name: str, value: Any) -> int:
    """The count as an int (numpy integers welcome), or ValueError naming it."""
    try:
        count = operator.index(value) if not isinstance(value, bool) else -1
    except TypeError:
        count = -1
    if count < 0:
        raise ValueError(f"{name} must be a whole number >= 0, not {value!r}")
    return int(count)


def subsampling_ratio(
    tp: int, fp: int, tn: int, fn: int, *, min_counts: int = 20, items: int | None = None
) -> SubsamplingRatio:
    """R from the detector's confusion counts, the closed form beside it, and the action for the round.

    ``items`` is how many labelled items the counts come from when each was
    counted more than once (counts summed over several cross-validation
    splits); ``min_counts`` is checked against it. None: the counts' total.

    Cases (DESIGN.md, "Subsampling ratio R"):
    - fewer than ``min_counts`` labelled items, or no actual H (TP+FN = 0),
      or no actual N (TN+FP = 0): R is undefined, the round samples at random;
    - TP = FP (gamma = 0.5): subsampling predicted H cannot move the balance,
      keep everything;
    - 0 <= R <= 1: keep share R of predicted H, all predicted N;
    - R > 1: keep all predicted H, share 1/R of predicted N;
    - (TN - FN)/(TP - FP) < 0: both predicted groups have the same majority; both H-majority: keep no
      predicted H, and R is 0 (DESIGN.md: "keep no predicted H (R = 0)"; the reason gives the formula's
      negative value); both N-majority: keep all, and R is the formula's negative value (DESIGN.md gives none).
    Negative counts raise ValueError naming the count.
    """
    tp, fp, tn, fn = (_check_count(name, value) for name, value in (("tp", tp), ("fp", fp), ("tn", tn), ("fn", fn)))
    min_counts = _check_count("min_counts", min_counts)
    total = tp + fp + tn + fn
    if items is not None and (_check_count("items", items) > total or (items == 0) != (total == 0)):
        raise ValueError(f"items ({items}) must be from 1 to the counts' total ({total}), or 0 with no counts")
    alpha = _share(tp, tp + fn)
    beta = _share(tn, tn + fp)
    gamma = _share(tp, tp + fp)
    figures = f"TP = {tp}, FP = {fp}, TN = {tn}, FN = {fn}"
    if items and items != total:
        figures += f", summed over splits that count each of the {items} items {total // items} times"

    def result(r: float | None, keep_h: float, keep_n: float, action: Action, reason: str) -> SubsamplingRatio:
        # A random round shows no closed form either: R itself is undefined there.
        closed, note = None, None
        if action not in RANDOM_ACTIONS:
            closed, note = closed_form(alpha, beta, gamma), closed_form_note(alpha, beta, gamma)
        if note:
            reason = f"{reason} {note}"
        return SubsamplingRatio(tp, fp, tn, fn, r, closed, alpha, beta, gamma, keep_h, keep_n, action, reason)

    labelled = total if items is None else items
    undefined = []
    if labelled < min_counts:
        undefined.append(f"only {labelled} labelled items, fewer than min_counts = {min_counts}")
    if tp + fn == 0:
        undefined.append("no item is actually H (TP+FN = 0)")
    if tn + fp == 0:
        undefined.append("no item is actually N (TN+FP = 0)")
    if undefined:
        action: Action = "random_too_few" if labelled < min_counts else "random_undefined"
        reason = f"R is undefined: {'; '.join(undefined)} ({figures}); the round samples at random."
        return result(None, 1.0, 1.0, action, reason)

    if tp == fp:
        if tp == 0:
            why = "no item was predicted H (TP = FP = 0), so there is no predicted-H group to subsample"
        else:
            why = (
                f"TP = FP = {tp} (gamma = 0.5): the predicted-H group is half H and half N, so keeping any share "
                "of it changes both classes equally and cannot change the balance"
            )
        return result(None, 1.0, 1.0, "no_subsampling_gamma_half", f"No subsampling: {why}; keep every item.")

    # TN = FN gives R = 0 exactly; dividing 0 by a negative TP - FP would give -0.0.
    r = (tn - fn) / (tp - fp) if tn != fn else 0.0
    if 0 <= r <= 1:
        reason = (
            f"R = (TN - FN)/(TP - FP) = ({tn} - {fn})/({tp} - {fp}) = {r:.4g}: keep a share R = {r:.4g} of the "
            "predicted-H items and all predicted-N items, so actual H and N are equal in expectation."
        )
        if tn + fn == 0:
            reason += (
                " No item was predicted N (TN = FN = 0), so the round keeps only predicted-N items of the pool, "
                "and these counts say nothing about their balance."
            )
        return result(r, r, 1.0, "keep_share_of_h", reason)
    if r > 1:
        # R > 1 means |TN - FN| > |TP - FP| with both of one sign. TP > FP: TN + FP > TP + FN, actual N dominates
        # and predicted N is mostly N. TP < FP: TP + FN > TN + FP, actual H dominates and predicted N is mostly H.
        # Either way thinning predicted N removes more of the dominant class; the action is the same.
        actual_h, actual_n = tp + fn, tn + fp
        if tp > fp:
            why = (
                f"actual N already dominates the counted items ({actual_n} N against {actual_h} H: TN + FP > "
                "TP + FN), and predicted N is mostly N (TN > FN), so thinning predicted N removes more N than H"
            )
        else:
            why = (
                f"actual H dominates the counted items ({actual_h} H against {actual_n} N: TP + FN > TN + FP), "
                "and predicted N is mostly H (FN > TN), so thinning predicted N removes more H than N"
            )
        reason = (
            f"R = (TN - FN)/(TP - FP) = ({tn} - {fn})/({tp} - {fp}) = {r:.4g} > 1: {why}; "
            f"keep all predicted-H items and a share 1/R = {1 / r:.4g} of the predicted-N items."
        )
        return result(r, 1.0, 1 / r, "keep_share_of_n", reason)
    if tp > fp:
        # Then FN > TN: predicted H is mostly H and predicted N is mostly H too. DESIGN.md: R = 0 here (what the
        # round keeps of predicted H); the formula's negative value stays in the reason.
        reason = (
            f"(TN - FN)/(TP - FP) = ({tn} - {fn})/({tp} - {fp}) = {r:.4g} < 0: both predicted groups are "
            "H-majority (TP > FP and FN > TN), so no subsampling balances them and R = 0: keep no predicted-H "
            "item and all predicted-N items."
        )
        return result(0.0, 0.0, 1.0, "keep_no_h", reason)
    reason = (
        f"R = ({tn} - {fn})/({tp} - {fp}) = {r:.4g} < 0: both predicted groups are N-majority (FP > TP and "
        "TN > FN), so no subsampling balances them; keep all items."
    )
    return result(r, 1.0, 1.0, "keep_all", reason)


def subsampled_class(ratio: SubsamplingRatio) -> str:
    """Which predicted class a ratio thins out: "H", "N", "neither" (keeps all), or "random" (R undefined)."""
    if ratio.action in RANDOM_ACTIONS:
        return "random"
    if ratio.keep_predicted_h < 1:
        return "H"
    return "N" if ratio.keep_predicted_n < 1 else "neither"


def split_spread(
    per_split: list[tuple[int, int, int, int]], *, min_counts: int = 20, items: int | None = None
) -> dict[str, Any]:
    """R of each cross-validation split alone, to show how far R moves with the split (and so with the seed).

    ``r_low``/``r_high`` span the defined R values (None when none is);
    ``agree`` is True when every split thins out the same predicted class
    (``subsampled``, see ``subsampled_class``): R = 0 from TN = FN (keep_share_of_h) and R = 0 from H-majority
    groups (keep_no_h) both keep no predicted H, so agreeing on the action's code would
    be too strict, while 1.6 and 4 both thin predicted N, only by how much.
    """
    ratios = [subsampling_ratio(*counts, min_counts=min_counts, items=items) for counts in per_split]
    defined = [ratio.r for ratio in ratios if ratio.r is not None]
    subsampled = sorted({subsampled_class(ratio) for ratio in ratios})
    return {
        "r_per_split": [ratio.r for ratio in ratios],
        "subsampled": subsampled,
        "agree": len(subsampled) <= 1,
        "r_low": min(defined) if defined else None,
        "r_high": max(defined) if defined else None,
    }
