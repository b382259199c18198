"""The funnel of a pairs round: score the pool, filter it, rebalance it and draw the items; changes nothing.

Round 1 draws ``size`` items from the pool at random (seeded). Every later
round k + 1 follows DESIGN.md ("Model-in-the-loop rounds"):

1. train detector k on every consensus item so far (states ``consensus`` and
   ``labelled``, H = 1) over the kept span vectors (annotate.services.pairs.detector);
2. score the pool: P(H) per item (steps 1, 2 and the counts of step 6 are
   annotate.services.pairs.pool_scores: no threshold changes them);
3. keep P(H) within [low, high] (the band; outside it an item is trivial);
4. drop paraphrases: paraphrase similarity above ``paraphrase_max``; items
   without an original (HaDes rows) have no similarity and pass;
5. drop ``drop_fraction`` of the obvious swaps (swap kind "date" or "name"),
   which ones chosen at random with the round's seed;
6. rebalance with the subsampling ratio R (annotate.pairmath.subsampling) from
   confusion counts on fresh labelled items: the previous detector's
   predictions on the last round's consensus items, which it selected but was
   not trained on. When there is no previous detector (round 2: round 1 was
   random), the counts are the new detector's cross-validated predictions on
   round 1's consensus items instead (folds over every labelled item; only
   round 1's items counted), summed over several fold splits drawn with the
   round's seed while the items are few (pool_scores.CrossValidation; the page
   shows the R each split gives alone, since the counts move with the split).
   Those items are the random round-1 draw, so held-out predictions on them
   estimate how the detector errs on the pool without bias; sampling round 2
   at random instead would skip the rebalancing in the round where the pool is
   most lopsided (HaDes: 90% H at random);
7. draw the round: the kept share of each predicted class (keep_predicted_h /
   keep_predicted_n) is taken at random, and ``size`` items are drawn from
   what is kept in proportion to the two classes, so the share R set holds in
   the round exactly rather than only in expectation.

Every selected item records why (``selection``): the method, P(H), the
predicted class, the filters it passed and its sampling probability (the
chance that an item of its predicted class which passed the filters was
drawn). Every step's count and explanation form the funnel, shown before
anything is committed (``preview_round``) and stored with the round.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db.models import Max

from annotate.models import PairItem, PairOriginal, PairRound, Project
from annotate.pairmath.subsampling import SubsamplingRatio, selection_balance, split_spread, subsampling_ratio
from annotate.services.pairs import detector as detection
from annotate.services.pairs import pool_scores, preview_cache, vectors
from annotate.services.pairs.config import get_config

__all__ = [
    "BAND",
    "DATE_NAME",
    "DEFAULT_DROP_FRACTION",
    "DEFAULT_HIGH",
    "DEFAULT_LOW",
    "DEFAULT_PARAPHRASE_MAX",
    "DEFAULT_SIZE",
    "PARAPHRASE",
    "POOL",
    "SELECTED",
    "SUBSAMPLING",
    "RoundPlan",
    "next_round_number",
    "preview_round",
]

DEFAULT_SIZE = 100
DEFAULT_LOW = 0.1
DEFAULT_HIGH = 0.9
DEFAULT_PARAPHRASE_MAX = 0.9
DEFAULT_DROP_FRACTION = 1.0
SWAP_KINDS = ("date", "name")
# Funnel steps, in order; a round-1 funnel has only the first and the last.
POOL, BAND, PARAPHRASE, DATE_NAME, SUBSAMPLING, SELECTED = (
    "pool", "band", "paraphrase", "date_name", "subsampling", "selected",
)


@dataclass
class RoundPlan:
    """What a round would be: its number, funnel, subsampling ratio and selected items, or why it cannot be drawn."""

    number: int
    funnel: list[dict[str, Any]]
    ratio: SubsamplingRatio | None
    selected: list[tuple[int, dict[str, Any]]]
    refusal: str | None
    seed: int = 0
    filters: dict[str, Any] = field(default_factory=dict)
    # Expected share of H among the drawn items if the detector errs on the pool as on the counts; None when random.
    promised_h_share: float | None = None
    # The share of H expected of the drawn items themselves (the pool's predicted mix may differ from the counts'),
    # with the mixes and the explanation (annotate.pairmath.subsampling.selection_balance); None when random.
    selection_balance: dict[str, Any] | None = None
    ratio_source: str | None = None  # where the confusion counts behind R come from, in words
    # When the counts are cross-validated: folds, splits, seed, each split's counts and the R each gives alone.
    cross_validation: dict[str, Any] | None = None
    detector: dict[str, Any] | None = None  # the detector this round would train: number, encoder, training counts
    head: detection.Head | None = field(default=None, repr=False)
    training: detection.TrainingSet | None = field(default=None, repr=False)
    train_seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase, for the benchmark
    # True when the detector, P(H) and counts were kept from an earlier preview: such a plan is never written.
    reused_scores: bool = False

    def ratio_dict(self) -> dict[str, Any]:
        """What the round stores as ``PairRound.ratio``: the ratio's figures, where its counts came from, the seed."""
        stored: dict[str, Any] = self.ratio.as_dict() if self.ratio is not None else {"R": None, "action": None}
        stored["counts_from"] = self.ratio_source
        stored["seed"] = self.seed
        stored["cross_validation"] = self.cross_validation
        if self.selection_balance is not None:
            stored["selection"] = self.selection_balance
        if self.ratio is None:
            stored["reason"] = self.ratio_source
        return stored

    def as_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data (the `pairs_round --json` output and the wizard's preview)."""
        return {
            "round": self.number,
            "seed": self.seed,
            "filters": self.filters,
            "funnel": self.funnel,
            "ratio": self.ratio_dict() if self.number > 1 else None,
            "promised_h_share": self.promised_h_share,
            "expected_h_share": self.selection_balance["expected_h_share"] if self.selection_balance else None,
            "detector": self.detector,
            "selected": len(self.selected),
            "refusal": self.refusal,
        }


def next_round_number(project: Project) -> int:
    return (PairRound.objects.filter(project=project).aggregate(last=Max("number"))["last"] or 0) + 1


def _parameter_problems(size: Any, low: Any, high: Any, paraphrase_max: Any, drop_fraction: Any) -> list[str]:
    problems = []
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        problems.append(f"size must be a whole number of 1 or more, not {size!r}")

    def number(name: str, value: Any, least: float, most: float) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float) or not least <= value <= most:
            problems.append(f"{name} must be a number from {least:g} to {most:g}, not {value!r}")

    number("low", low, 0.0, 1.0)
    number("high", high, 0.0, 1.0)
    number("paraphrase_max", paraphrase_max, -1.0, 1.0)
    number("drop_fraction", drop_fraction, 0.0, 1.0)
    if not problems and low > high:
        problems.append(f"low ({low:g}) must not be above high ({high:g})")
    return problems


def _step(step: str, count: int, explanation: str) -> dict[str, Any]:
    return {"step": step, "count": int(count), "explanation": explanation}


def _share(value: float) -> str:
    return f"{value:.4g}"


def preview_round(
    project: Project,
    *,
    size: int,
    low: float,
    high: float,
    paraphrase_max: float = DEFAULT_PARAPHRASE_MAX,
    drop_fraction: float = DEFAULT_DROP_FRACTION,
    seed: int | None = None,
    reuse_scores: bool = False,
) -> RoundPlan:
    """The next round as it would be drawn, with its funnel; changes nothing.

    A plan that cannot be drawn has ``refusal`` set (and the funnel as far as it
    got). ``seed`` None picks one; the plan carries it, so creating the round with
    the same seed (and unchanged items) draws exactly the previewed items.
    ``reuse_scores`` (the wizard's previews) takes the trained detector, the
    pool's P(H) and the counts for R from the last preview of the project when
    nothing they depend on changed (annotate.services.pairs.preview_cache), so
    moving a threshold only filters again; the plan is the same as a fresh one.
    """
    seed = secrets.randbelow(2**31) if seed is None else seed
    number = next_round_number(project)
    filters = {"low": low, "high": high, "paraphrase_max": paraphrase_max, "drop_fraction": drop_fraction}
    plan = RoundPlan(number=number, funnel=[], ratio=None, selected=[], refusal=None, seed=seed, filters=filters)
    problems = _parameter_problems(size, low, high, paraphrase_max, drop_fraction)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        problems.append(f"seed must be a whole number of 0 or more, not {seed!r}")
    if problems:
        plan.refusal = "The round's parameters are not valid: " + "; ".join(problems) + "."
        return plan
    if number == 1:
        return _plan_random(project, plan, size)
    return _plan_with_detector(project, plan, size, reuse_scores=reuse_scores)


def _plan_random(project: Project, plan: RoundPlan, size: int) -> RoundPlan:
    pool = np.asarray(
        PairItem.objects.filter(project=project, state=PairItem.State.POOL).order_by("pk").values_list("pk", flat=True),
        dtype=np.int64,
    )
    # Round 1 applies no filter: it stores none, so nothing shows thresholds that were never used.
    plan.filters = {}
    plan.funnel.append(_step(POOL, len(pool), "Items not yet drawn into a round. Round 1 has no detector yet: "
                                              "it is drawn from the whole pool at random."))
    if not len(pool):
        plan.refusal = _empty_pool_refusal(project)
        return plan
    rng = np.random.default_rng(plan.seed)
    drawn = np.sort(rng.choice(pool, size=min(size, len(pool)), replace=False))
    probability = round(len(drawn) / len(pool), 6)
    selection = {"method": "random", "p_h": None, "predicted": None, "filters_passed": [],
                 "sampling_probability": probability}
    plan.selected = [(int(item_id), dict(selection)) for item_id in drawn]
    explanation = f"{len(drawn)} of the {len(pool)} pool items drawn at random with seed {plan.seed}."
    if len(pool) < size:
        explanation += f" The pool holds fewer items than the size asked for ({size}): all of them are drawn."
    plan.funnel.append(_step(SELECTED, len(drawn), explanation))
    return plan


def _empty_pool_refusal(project: Project) -> str:
    """Why round 1 has nothing to draw: every item is in a round already, or the project has no item at all yet."""
    if PairItem.objects.filter(project=project).exists():
        return "The pool is empty: every item is already in a round. Import or perturb more texts first."
    originals = PairOriginal.objects.filter(project=project).count()
    if originals:
        one = originals == 1
        return (f"The pool is empty: this project has no items yet, and its {originals} imported text"
                f"{'' if one else 's'} {'is' if one else 'are'} not perturbed yet. Perturb {'it' if one else 'them'} "
                "on the project page first, or import ready pairs or HaDes rows.")
    return ("The pool is empty: this project has no items yet. Import ready pairs, HaDes rows or raw texts to "
            "perturb on the project page first.")


def _unscored_pool_explanation(project: Project, encoder: str) -> str:
    """The pool step of a plan that could not score the pool: when vectors are missing, that scoring waits for them.

    Without this the pool row reads as if the pool held nothing to score, when the items are there and only their
    span vectors are not (yet).
    """
    missing = vectors.stale_items(project, encoder).filter(
        state__in=(PairItem.State.POOL, PairItem.State.CONSENSUS, PairItem.State.LABELLED)
    ).count()
    if not missing:
        return "Items not yet drawn into a round."
    return (
        f"Items not yet drawn into a round. Scoring them waits for the span vectors: {missing} item"
        f"{'' if missing == 1 else 's'} (pool and labelled) {'has' if missing == 1 else 'have'} none from the encoder "
        f"{encoder!r} yet. The band, filters and subsampling follow once they are computed."
    )


def _plan_with_detector(project: Project, plan: RoundPlan, size: int, *, reuse_scores: bool) -> RoundPlan:
    config = get_config(project)
    encoder = vectors.encoder_name(project)
    low, high = plan.filters["low"], plan.filters["high"]
    paraphrase_max, drop_fraction = plan.filters["paraphrase_max"], plan.filters["drop_fraction"]
    # 1. Train detector k = number - 1 on every labelled item so far; 2. score the pool (and get the counts of 6.).
    scored, refusal, fingerprint = None, None, None
    if reuse_scores:
        began = time.perf_counter()
        fingerprint = preview_cache.fingerprint(project, encoder, plan.seed, plan.number)
        scored = preview_cache.kept_scores(project, fingerprint)
        plan.timings["cache"] = time.perf_counter() - began
    if scored is not None:
        plan.reused_scores = True
        # The project's min_counts may have been raised since the scores were kept.
        refusal = detection.training_refusal(scored.trained_on, scored.trained_h, config.min_counts)
        pool_count = len(scored.ids)
    else:
        scored, pool_count, refusal = pool_scores.score_pool(
            project, number=plan.number, seed=plan.seed, encoder=encoder, min_counts=config.min_counts
        )
        if scored is not None:
            plan.timings.update(scored.timings)
            if fingerprint is not None:
                preview_cache.keep_scores(project, fingerprint, scored)
    if scored is None or refusal is not None:
        plan.funnel.append(_step(POOL, pool_count, _unscored_pool_explanation(project, encoder)))
        plan.refusal = refusal
        return plan

    plan.head, plan.training, plan.train_seconds = scored.head, scored.training, scored.train_seconds
    plan.detector = {"number": plan.number - 1, "encoder": encoder, "trained_on": scored.trained_on,
                     "trained_h": scored.trained_h, "train_seconds": round(scored.train_seconds, 3)}
    p_h = scored.p_h
    began = time.perf_counter()
    plan.funnel.append(_step(POOL, pool_count, (
        f"Items not yet drawn into a round, each scored by detector {plan.number - 1} (trained on "
        f"{scored.trained_on} consensus or imported-label items: {scored.trained_h} H, {scored.trained_n} N)."
    )))
    rng = np.random.default_rng(plan.seed)

    # 3. Band.
    in_band = (p_h >= low) & (p_h <= high)
    below, above = int((p_h < low).sum()), int((p_h > high).sum())
    plan.funnel.append(_step(BAND, int(in_band.sum()), (
        f"P(H) from {low:g} to {high:g}: {below} items below {low:g} (surely N) and {above} above {high:g} "
        "(surely H) dropped as trivial."
    )))
    # 4. Paraphrases; no original means no similarity, and the item passes.
    no_original = np.isnan(scored.paraphrase)
    paraphrase = np.where(no_original, -np.inf, scored.paraphrase) > paraphrase_max
    after_paraphrase = in_band & ~paraphrase
    plan.funnel.append(_step(PARAPHRASE, int(after_paraphrase.sum()), (
        f"{int((in_band & paraphrase).sum())} dropped as paraphrases (cosine of the span's vector and the "
        f"original span's above {paraphrase_max:g}); {int((in_band & no_original).sum())} have no original text "
        "(HaDes rows) and pass."
    )))
    # 5. Obvious DATE / NAME swaps: drop_fraction of them, chosen with the round's seed.
    swaps = np.flatnonzero(after_paraphrase & np.isin(scored.swap, SWAP_KINDS))
    dropped = rng.permutation(swaps)[: int(round(drop_fraction * len(swaps)))]
    after_swaps = after_paraphrase.copy()
    after_swaps[dropped] = False
    dates = int((scored.swap[swaps] == "date").sum())
    plan.funnel.append(_step(DATE_NAME, int(after_swaps.sum()), (
        f"{dates} date swaps and {len(swaps) - dates} name swaps passed so far; {len(dropped)} of them dropped "
        f"(share of date/name swaps dropped: {drop_fraction:g}, chosen at random with the round's seed)."
    )))

    # 6. The subsampling ratio from fresh confusion counts.
    counts, source = scored.counts, scored.counts_source
    plan.ratio_source = source
    if counts is not None:
        plan.ratio = subsampling_ratio(*counts, min_counts=config.min_counts, items=scored.counted_items)
        if scored.cross_validation is not None:
            plan.cross_validation = {
                **scored.cross_validation.as_dict(),
                **split_spread(list(scored.cross_validation.per_split), min_counts=config.min_counts,
                               items=scored.cross_validation.items),
            }
        keep_h, keep_n = plan.ratio.keep_predicted_h, plan.ratio.keep_predicted_n
        plan.promised_h_share = plan.ratio.promised_h_share()
        why = plan.ratio.reason or ""
    else:
        keep_h = keep_n = 1.0
        why = source
    predicted_h = p_h >= detection.THRESHOLD
    groups = {"H": np.flatnonzero(after_swaps & predicted_h), "N": np.flatnonzero(after_swaps & ~predicted_h)}
    kept = {
        "H": np.sort(rng.permutation(groups["H"])[: int(round(keep_h * len(groups["H"])))]),
        "N": np.sort(rng.permutation(groups["N"])[: int(round(keep_n * len(groups["N"])))]),
    }
    kept_count = len(kept["H"]) + len(kept["N"])
    plan.funnel.append(_step(SUBSAMPLING, kept_count, (
        f"Kept {len(kept['H'])} of {len(groups['H'])} predicted H (share {_share(keep_h)}) and {len(kept['N'])} "
        f"of {len(groups['N'])} predicted N (share {_share(keep_n)}). {why} Counts: {source}"
    )))
    if not kept_count:
        plan.refusal = (
            "No item is left after the filters and the subsampling: widen the P(H) band, raise the paraphrase "
            "threshold or lower the share of date/name swaps dropped."
        )
        return plan

    # 7. Draw in proportion to what each class kept.
    total = min(size, kept_count)
    from_h = int(round(total * len(kept["H"]) / kept_count))
    draws = {"H": from_h, "N": total - from_h}
    chosen: list[tuple[int, dict[str, Any]]] = []
    for predicted in ("H", "N"):
        picked = np.sort(rng.permutation(kept[predicted])[: draws[predicted]])
        probability = round(draws[predicted] / len(groups[predicted]), 6) if len(groups[predicted]) else 0.0
        for index in picked:
            chosen.append((int(scored.ids[index]), {
                "method": "detector",
                "p_h": round(float(p_h[index]), 4),
                "predicted": predicted,
                "filters_passed": ["band", "paraphrase", "date_name", "subsampling"],
                "sampling_probability": probability,
            }))
    plan.selected = sorted(chosen)
    if plan.ratio is not None:
        plan.selection_balance = selection_balance(
            plan.ratio, len(groups["H"]), len(groups["N"]), draws["H"], draws["N"]
        )
    explanation = (
        f"{total} drawn at random from the {kept_count} kept: {draws['H']} predicted H and {draws['N']} predicted "
        f"N, in proportion to what each class kept (seed {plan.seed})."
    )
    if kept_count < size:
        explanation += f" Fewer items were kept than the size asked for ({size}): all of them are drawn."
    plan.funnel.append(_step(SELECTED, total, explanation))
    plan.timings["funnel"] = time.perf_counter() - began
    return plan
