"""Model-in-the-loop rounds of a pairs project: preview the funnel, draw the round, report how it went.

Round 1 draws ``size`` items from the pool at random (seeded). Every later
round k + 1 follows DESIGN.md ("Model-in-the-loop rounds"):

1. train detector k on every consensus item so far (states ``consensus`` and
   ``labelled``, H = 1) over the kept span vectors (annotate.services.pairs.detector);
2. score the pool: P(H) per item;
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
   its training items instead. Those items are the random round-1 draw (plus
   any imported labels), so held-out predictions on them estimate how the
   detector errs on the pool without bias; sampling round 2 at random instead
   would skip the rebalancing in the round where the pool is most lopsided
   (HaDes: 90% H at random);
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

import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, F, Max, Q, Value
from django.db.models.functions import Least
from django.utils import timezone

from annotate.models import Job, PairConfig, PairItem, PairRound, Project
from annotate.pairmath.subsampling import SubsamplingRatio, subsampling_ratio
from annotate.services.pairs import detector as detection
from annotate.services.pairs import vectors
from annotate.services.pairs.detector import RoundRefused

__all__ = [
    "RoundPlan",
    "RoundRefused",
    "create_round",
    "next_round_number",
    "preview_round",
    "round_report",
    "run_round_job",
    "start_round_job",
]

log = logging.getLogger(__name__)

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
UPDATE_BATCH = 500


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
    ratio_source: str | None = None  # where the confusion counts behind R come from, in words
    detector: dict[str, Any] | None = None  # the detector this round would train: number, encoder, training counts
    head: detection.Head | None = field(default=None, repr=False)
    training: detection.TrainingSet | None = field(default=None, repr=False)
    train_seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase, for the benchmark

    def ratio_dict(self) -> dict[str, Any]:
        """What the round stores as ``PairRound.ratio``: the ratio's figures, where its counts came from, the seed."""
        stored: dict[str, Any] = self.ratio.as_dict() if self.ratio is not None else {"R": None, "action": None}
        stored["counts_from"] = self.ratio_source
        stored["seed"] = self.seed
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
            "detector": self.detector,
            "selected": len(self.selected),
            "refusal": self.refusal,
        }


def next_round_number(project: Project) -> int:
    return (PairRound.objects.filter(project=project).aggregate(last=Max("number"))["last"] or 0) + 1


def _config(project: Project) -> PairConfig:
    return PairConfig.objects.get_or_create(project=project)[0]


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
) -> RoundPlan:
    """The next round as it would be drawn, with its funnel; changes nothing.

    A plan that cannot be drawn has ``refusal`` set (and the funnel as far as it
    got). ``seed`` None picks one; the plan carries it, so creating the round with
    the same seed (and unchanged items) draws exactly the previewed items.
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
    return _plan_with_detector(project, plan, size)


def _plan_random(project: Project, plan: RoundPlan, size: int) -> RoundPlan:
    pool = np.asarray(
        PairItem.objects.filter(project=project, state=PairItem.State.POOL).order_by("pk").values_list("pk", flat=True),
        dtype=np.int64,
    )
    plan.funnel.append(_step(POOL, len(pool), "Items not yet drawn into a round. Round 1 has no detector yet: "
                                              "it is drawn from the whole pool at random."))
    if not len(pool):
        plan.refusal = "The pool is empty: every item is already in a round. Import or perturb texts first."
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


@dataclass
class _Candidates:
    """The pool and the training items, with the features the funnel reads, in id order."""

    ids: np.ndarray
    vectors: np.ndarray
    paraphrase: np.ndarray  # NaN where there is no original
    swap: np.ndarray  # "date", "name", "" (None counts as "")


def _load(project: Project, encoder: str) -> tuple[_Candidates, detection.TrainingSet, dict[int, int], str | None]:
    """Pool items and labelled items with their vectors; a refusal when some vectors are missing."""
    rows = list(
        PairItem.objects.filter(
            project=project, state__in=(PairItem.State.POOL, PairItem.State.CONSENSUS, PairItem.State.LABELLED)
        )
        .order_by("pk")
        .values_list("pk", "state", "label", "round_id", "vector", "vector_model", "paraphrase_similarity", "swap_kind")
    )
    pool_rows = [row for row in rows if row[1] == PairItem.State.POOL]
    train_rows = [row for row in rows if row[1] != PairItem.State.POOL and row[2] in ("H", "N")]
    missing_pool = sum(1 for row in pool_rows if not row[4] or row[5] != encoder)
    missing_train = sum(1 for row in train_rows if not row[4] or row[5] != encoder)
    refusal = None
    if missing_pool or missing_train:
        refusal = (
            f"{missing_pool} of the {len(pool_rows)} pool items and {missing_train} of the {len(train_rows)} "
            f"labelled items have no span vector from the encoder {encoder!r} yet: compute the span vectors "
            "first (the round job and `pairs_round` compute them before drawing a round)."
        )
    usable_pool = [row for row in pool_rows if row[4] and row[5] == encoder]
    usable_train = [row for row in train_rows if row[4] and row[5] == encoder]
    lengths = {len(row[4]) for row in usable_pool + usable_train}
    if len(lengths) > 1 and refusal is None:
        refusal = (f"The kept span vectors of encoder {encoder!r} have different lengths ({sorted(lengths)} bytes): "
                   "compute them again (clear the items' vector_model).")
        usable_pool, usable_train = [], []
    candidates = _Candidates(
        ids=np.asarray([row[0] for row in usable_pool], dtype=np.int64),
        vectors=detection.decode_vectors([row[4] for row in usable_pool]),
        paraphrase=np.asarray(
            [np.nan if row[6] is None else row[6] for row in usable_pool], dtype=np.float64
        ),
        swap=np.asarray([row[7] or "" for row in usable_pool], dtype=object),
    )
    training = detection.TrainingSet(
        item_ids=[row[0] for row in usable_train],
        vectors=detection.decode_vectors([row[4] for row in usable_train]),
        labels=np.asarray([1 if row[2] == "H" else 0 for row in usable_train], dtype=np.int64),
    )
    round_of = {row[0]: row[3] for row in usable_train if row[1] == PairItem.State.CONSENSUS}
    return candidates, training, round_of, refusal


def _counts_for_ratio(
    project: Project, plan: RoundPlan, training: detection.TrainingSet, round_of: dict[int, int], encoder: str
) -> tuple[tuple[int, int, int, int] | None, str]:
    """Confusion counts for R and where they come from (in words); None counts when they cannot be had."""
    last = PairRound.objects.filter(project=project, number__lt=plan.number).order_by("-number").first()
    previous = last.detector if last is not None else None
    dimension = training.vectors.shape[1] if training.vectors.size else 0
    if previous is not None and previous.encoder == encoder:
        head = detection.load_head(previous)
        if head.dimension == dimension:
            assert last is not None
            rows = [index for index, item_id in enumerate(training.item_ids) if round_of.get(item_id) == last.pk]
            p_h = head.p_h(training.vectors[rows]) if rows else np.zeros(0)
            counts = detection.confusion_counts(training.labels[rows], p_h)
            return counts, (
                f"Detector {previous.number}'s predictions (P(H) >= {detection.THRESHOLD}) on the {len(rows)} "
                f"consensus items of round {last.number}, the round it selected and was not trained on."
            )
    why = (f"round {last.number} was drawn at random" if last is not None and previous is None
           else "the previous detector used another encoder")
    try:
        p_h = detection.cross_validated_p_h(training.vectors, training.labels, seed=plan.seed + 1)
    except ValueError as error:
        return None, (f"R is undefined: {why}, and cross-validation is not possible ({error}); "
                      "the round samples at random.")
    counts = detection.confusion_counts(training.labels, p_h)
    folds = min(detection.CV_FOLDS, training.h, training.n)
    return counts, (
        f"No earlier detector was scored on fresh items ({why}), so the counts are detector "
        f"{plan.number - 1}'s {folds}-fold cross-validated predictions on its {len(training.labels)} training items: "
        "each item scored by a head trained without it."
    )


def _plan_with_detector(project: Project, plan: RoundPlan, size: int) -> RoundPlan:
    config = _config(project)
    encoder = vectors.encoder_name(project)
    low, high = plan.filters["low"], plan.filters["high"]
    paraphrase_max, drop_fraction = plan.filters["paraphrase_max"], plan.filters["drop_fraction"]
    began = time.perf_counter()
    candidates, training, round_of, refusal = _load(project, encoder)
    plan.timings["read"] = time.perf_counter() - began
    pool_count = len(candidates.ids)
    if refusal is None:
        refusal = detection.training_refusal(len(training.labels), training.h, config.min_counts)
    if refusal is None and not pool_count:
        refusal = "The pool is empty: every item is already in a round. Import or perturb more texts first."
    if refusal is not None:
        plan.funnel.append(_step(POOL, pool_count, "Items not yet drawn into a round."))
        plan.refusal = refusal
        return plan

    # 1. Train detector k = number - 1 on every labelled item so far.
    head, seconds = detection.timed_train(training, seed=plan.seed)
    plan.head, plan.training, plan.train_seconds = head, training, seconds
    plan.timings["train"] = seconds
    plan.detector = {"number": plan.number - 1, "encoder": encoder, "trained_on": len(training.labels),
                     "trained_h": training.h, "train_seconds": round(seconds, 3)}
    # 2. Score the pool.
    began = time.perf_counter()
    p_h = head.p_h(candidates.vectors)
    plan.timings["score"] = time.perf_counter() - began
    began = time.perf_counter()
    plan.funnel.append(_step(POOL, pool_count, (
        f"Items not yet drawn into a round, each scored by detector {plan.number - 1} (trained on "
        f"{len(training.labels)} consensus or imported-label items: {training.h} H, {training.n} N)."
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
    no_original = np.isnan(candidates.paraphrase)
    paraphrase = np.where(no_original, -np.inf, candidates.paraphrase) > paraphrase_max
    after_paraphrase = in_band & ~paraphrase
    plan.funnel.append(_step(PARAPHRASE, int(after_paraphrase.sum()), (
        f"{int((in_band & paraphrase).sum())} dropped as paraphrases (cosine of the span's vector and the "
        f"original span's above {paraphrase_max:g}); {int((in_band & no_original).sum())} have no original text "
        "(HaDes rows) and pass."
    )))
    # 5. Obvious DATE / NAME swaps: drop_fraction of them, chosen with the round's seed.
    swaps = np.flatnonzero(after_paraphrase & np.isin(candidates.swap, SWAP_KINDS))
    dropped = rng.permutation(swaps)[: int(round(drop_fraction * len(swaps)))]
    after_swaps = after_paraphrase.copy()
    after_swaps[dropped] = False
    dates = int((candidates.swap[swaps] == "date").sum())
    plan.funnel.append(_step(DATE_NAME, int(after_swaps.sum()), (
        f"{dates} date swaps and {len(swaps) - dates} name swaps passed so far; {len(dropped)} of them dropped "
        f"(drop_fraction {drop_fraction:g}, chosen at random with the round's seed)."
    )))

    # 6. The subsampling ratio from fresh confusion counts.
    began_ratio = time.perf_counter()
    counts, source = _counts_for_ratio(project, plan, training, round_of, encoder)
    plan.timings["ratio"] = time.perf_counter() - began_ratio
    plan.ratio_source = source
    if counts is not None:
        plan.ratio = subsampling_ratio(*counts, min_counts=config.min_counts)
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
            "No item is left after the filters and the subsampling: widen the P(H) band, raise paraphrase_max or "
            "lower drop_fraction."
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
            chosen.append((int(candidates.ids[index]), {
                "method": "detector",
                "p_h": round(float(p_h[index]), 4),
                "predicted": predicted,
                "filters_passed": ["band", "paraphrase", "date_name", "subsampling"],
                "sampling_probability": probability,
            }))
    plan.selected = sorted(chosen)
    explanation = (
        f"{total} drawn at random from the {kept_count} kept: {draws['H']} predicted H and {draws['N']} predicted "
        f"N, in proportion to what each class kept (seed {plan.seed})."
    )
    if kept_count < size:
        explanation += f" Fewer items were kept than the size asked for ({size}): all of them are drawn."
    plan.funnel.append(_step(SELECTED, total, explanation))
    plan.timings["funnel"] = time.perf_counter() - began - plan.timings["ratio"]
    return plan


def create_round(
    project: Project,
    user: AbstractBaseUser | None,
    *,
    size: int,
    low: float,
    high: float,
    paraphrase_max: float = DEFAULT_PARAPHRASE_MAX,
    drop_fraction: float = DEFAULT_DROP_FRACTION,
    seed: int | None = None,
) -> PairRound:
    """Draw the next round and open it to the project's annotators, in one transaction.

    The previous open round is closed (its items stay as they are; they are no
    longer served). Raises RoundRefused with the plan's refusal, having changed
    nothing. A detector trained for the round is stored with it.
    """
    with transaction.atomic():
        # One round at a time per project: a second call waits here and then plans the round after.
        Project.objects.select_for_update().filter(pk=project.pk).exists()
        plan = preview_round(project, size=size, low=low, high=high, paraphrase_max=paraphrase_max,
                             drop_fraction=drop_fraction, seed=seed)
        if plan.refusal is not None:
            raise RoundRefused(plan.refusal)
        return _write_round(project, user, plan, size)


def _write_round(project: Project, user: AbstractBaseUser | None, plan: RoundPlan, size: int) -> PairRound:
    began = time.perf_counter()
    config = _config(project)
    ids = [item_id for item_id, _ in plan.selected]
    still_in_pool = 0
    for at in range(0, len(ids), UPDATE_BATCH):
        still_in_pool += len(
            PairItem.objects.select_for_update()
            .filter(pk__in=ids[at : at + UPDATE_BATCH], state=PairItem.State.POOL)
            .values_list("pk", flat=True)
        )
    if still_in_pool != len(ids):
        raise RoundRefused(
            f"{len(ids) - still_in_pool} of the {len(ids)} selected items left the pool while the round was "
            "planned; preview the round again."
        )
    now = timezone.now()
    PairRound.objects.filter(project=project, status=PairRound.Status.OPEN).update(
        status=PairRound.Status.CLOSED, closed_at=now
    )
    stored_detector = None
    if plan.head is not None and plan.training is not None and plan.detector is not None:
        stored_detector = detection.save_detector(
            project, plan.detector["number"], plan.detector["encoder"], plan.head, plan.training, plan.train_seconds
        )
    pair_round = PairRound.objects.create(
        project=project, number=plan.number, size=size, seed=plan.seed, filters=plan.filters, funnel=plan.funnel,
        ratio=plan.ratio_dict() if plan.number > 1 else {"R": None, "action": None, "counts_from": None,
                                                         "seed": plan.seed, "reason": "Round 1 is drawn at random."},
        promised_h_share=plan.promised_h_share, detector=stored_detector, created_by=user,
    )
    PairItem.objects.bulk_update(
        [
            PairItem(pk=item_id, round=pair_round, state=PairItem.State.OPEN, judges_needed=config.judges_per_item,
                     taken=0, selection=selection)
            for item_id, selection in plan.selected
        ],
        ["round", "state", "judges_needed", "taken", "selection"],
        batch_size=UPDATE_BATCH,
    )
    plan.timings["write"] = time.perf_counter() - began
    log.info("pairs round %s of %s: %s items drawn", plan.number, project.slug, len(ids))
    return pair_round


def create_round_from_plan(project: Project, user: AbstractBaseUser | None, plan: RoundPlan, size: int) -> PairRound:
    """Write a plan made by ``preview_round`` (same process, moments ago); the benchmark times the two apart.

    Raises RoundRefused when the plan was refused, when a round was created
    since, or when its items left the pool meanwhile.
    """
    if plan.refusal is not None:
        raise RoundRefused(plan.refusal)
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).exists()
        if next_round_number(project) != plan.number:
            raise RoundRefused(f"Round {plan.number} was created meanwhile; preview the next round again.")
        return _write_round(project, user, plan, size)


# --- background job ----------------------------------------------------------------------------------------

ROUND_PARAMETERS = ("size", "low", "high", "paraphrase_max", "drop_fraction", "seed")


def start_round_job(project: Project, user: AbstractBaseUser | None, **params: Any) -> Job:
    """A PAIR_ROUND job with the wizard's parameters, queued on commit; it computes missing vectors first.

    The seed is fixed here when not given, so a rerun of the job draws the same round.
    """
    from annotate.tasks import create_pair_round

    unknown = sorted(set(params) - set(ROUND_PARAMETERS))
    if unknown:
        raise ValueError(f"unknown round parameters {unknown}; expected some of {list(ROUND_PARAMETERS)}")
    options = {"size": DEFAULT_SIZE, "low": DEFAULT_LOW, "high": DEFAULT_HIGH,
               "paraphrase_max": DEFAULT_PARAPHRASE_MAX, "drop_fraction": DEFAULT_DROP_FRACTION, **params}
    if options.get("seed") is None:
        options["seed"] = secrets.randbelow(2**31)
    job = Job.objects.create(project=project, kind=Job.Kind.PAIR_ROUND, total=1, created_by=user, options=options)
    transaction.on_commit(lambda: create_pair_round.delay(job.pk))
    return job


def run_round_job(job_id: int) -> Job:
    """Compute the missing span vectors (rounds after the first), then create the round; progress on the job row.

    A refusal marks the job failed with its message (nothing else changes). The
    round and the job's "done" are written in one transaction, so a task run
    again after a stop never draws a second round.
    """
    job = Job.objects.select_related("project", "created_by").get(pk=job_id)
    if job.status in (Job.Status.DONE, Job.Status.FAILED):
        return job
    project = job.project
    if PairRound.objects.filter(pk=job.options.get("round_id"), project=project).exists():
        # This job's round exists already (it is written with the job's "done"): never draw a second one.
        Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE, done=F("total"), finished_at=timezone.now())
        job.refresh_from_db()
        return job
    params = {name: job.options[name] for name in ROUND_PARAMETERS if name in job.options}
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, error="")
    try:
        total = 1
        if next_round_number(project) > 1:
            encoder = vectors.encoder_name(project)
            missing = vectors.stale_items(project, encoder).count()
            total = missing + 1
            Job.objects.filter(pk=job.pk).update(total=total, done=0)
            vectors.compute_vectors(
                project, encoder=encoder,
                progress=lambda written: Job.objects.filter(pk=job.pk).update(
                    done=Least(F("done") + written, Value(total - 1))
                ),
            )
        with transaction.atomic():
            pair_round = create_round(project, job.created_by, **params)
            Job.objects.filter(pk=job.pk).update(
                status=Job.Status.DONE, total=total, done=total, finished_at=timezone.now(),
                options={**job.options, "round": pair_round.number, "round_id": pair_round.pk},
            )
    except RoundRefused as refusal:
        Job.objects.filter(pk=job.pk).update(status=Job.Status.FAILED, error=str(refusal), finished_at=timezone.now())
    except Exception as error:
        log.exception("pairs round job %s failed", job.pk)
        Job.objects.filter(pk=job.pk).update(status=Job.Status.FAILED, error=str(error), finished_at=timezone.now())
        raise
    job.refresh_from_db()
    return job


# --- report --------------------------------------------------------------------------------------------------


def round_report(pair_round: PairRound) -> dict[str, Any]:
    """How a round went: its items by state, the selecting detector's metrics on its consensus items, the balance.

    The metrics are those of the detector that selected the round (trained
    before any of its items were judged) on the round's consensus items, so they
    are held-out figures. ``balance`` puts the share of H reached among the
    consensus items beside the share the subsampling promised.
    """
    from annotate.pairmath.metrics import detector_metrics

    states = dict(
        PairItem.objects.filter(round=pair_round).values_list("state").annotate(n=Count("id")).order_by()
    )
    consensus = PairItem.objects.filter(round=pair_round, state=PairItem.State.CONSENSUS)
    labels = consensus.aggregate(h=Count("id", filter=Q(label="H")), n=Count("id", filter=Q(label="N")))
    h, n = labels["h"], labels["n"]
    report: dict[str, Any] = {
        "round": pair_round.number,
        "status": pair_round.status,
        "size": pair_round.size,
        "drawn": sum(states.values()),
        "states": {state: states.get(state, 0) for state, _ in PairItem.State.choices},
        "detector": None,
        "metrics": None,
        "metrics_reason": None,
        "balance": {
            "h": h, "n": n, "h_share": h / (h + n) if h + n else None,
            "promised_h_share": pair_round.promised_h_share,
        },
        "ratio": pair_round.ratio,
        "funnel": pair_round.funnel,
    }
    detector = pair_round.detector
    if detector is None:
        report["metrics_reason"] = (
            "No detector selected this round (round 1 is drawn at random), so there is nothing to evaluate."
            if pair_round.number == 1 else "The detector that selected this round was deleted."
        )
        return report
    report["detector"] = {"number": detector.number, "encoder": detector.encoder,
                          "trained_on": detector.trained_on, "trained_h": detector.trained_h}
    rows = list(consensus.filter(vector_model=detector.encoder, vector__isnull=False)
                .order_by("pk").values_list("label", "vector"))
    without_vector = h + n - len(rows)
    if not rows:
        report["metrics_reason"] = (
            "No consensus item of this round yet." if h + n == 0 else
            f"None of the {h + n} consensus items has a span vector from {detector.encoder!r}."
        )
        return report
    head = detection.load_head(detector)
    p_h = head.p_h(detection.decode_vectors([vector for _, vector in rows]))
    report["metrics"] = detector_metrics([1 if label == "H" else 0 for label, _ in rows], p_h.tolist())
    if without_vector:
        report["metrics_reason"] = (f"{without_vector} of the {h + n} consensus items have no span vector from "
                                    f"{detector.encoder!r} and are left out.")
    return report
