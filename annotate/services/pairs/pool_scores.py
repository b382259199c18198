"""The half of a round's plan that no threshold changes: the detector, the pool's P(H) and the counts behind R.

Steps 1 and 2 of the funnel (annotate.services.pairs.funnel) and the
confusion counts of step 6 depend on the labelled items, the pool, the
encoder, the round number and the seed, never on the band, the paraphrase
limit, the swap fraction or the size. ``score_pool`` computes them once; the
funnel then filters and draws from the result, and the wizard keeps it
between previews (annotate.services.pairs.preview_cache).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from annotate.models import PairItem, PairRound, Project
from annotate.services.pairs import detector as detection

ConfusionCounts = tuple[int, int, int, int]


@dataclass
class ScoredPool:
    """The pool scored by a freshly trained detector, with the features the filters read, in id order."""

    ids: np.ndarray
    p_h: np.ndarray
    paraphrase: np.ndarray  # NaN where there is no original
    swap: np.ndarray  # "date", "name", "" (None counts as "")
    trained_on: int
    trained_h: int
    head: detection.Head
    train_seconds: float
    counts: ConfusionCounts | None  # for R; None when they cannot be had
    counts_source: str  # where the counts come from, or why there are none, in words
    timings: dict[str, float] = field(default_factory=dict)
    # The labelled items the head was trained on; only a fresh score has them (a round stores its detector from them).
    training: detection.TrainingSet | None = field(default=None, repr=False)

    @property
    def trained_n(self) -> int:
        return self.trained_on - self.trained_h


@dataclass
class _Candidates:
    """The pool items with their vectors and the features the funnel reads, in id order."""

    ids: np.ndarray
    vectors: np.ndarray
    paraphrase: np.ndarray
    swap: np.ndarray


def score_pool(
    project: Project, *, number: int, seed: int, encoder: str, min_counts: int
) -> tuple[ScoredPool | None, int, str | None]:
    """Train detector ``number - 1`` on every labelled item, score the pool and get the counts for R.

    Returns (the scored pool, the pool's size, None), or (None, the pool's size,
    why it cannot be done) with nothing trained: missing vectors, too few
    labelled items, one class only, an empty pool.
    """
    timings: dict[str, float] = {}
    began = time.perf_counter()
    candidates, training, round_of, refusal = _load(project, encoder)
    timings["read"] = time.perf_counter() - began
    pool_count = len(candidates.ids)
    if refusal is None:
        refusal = detection.training_refusal(len(training.labels), training.h, min_counts)
    if refusal is None and not pool_count:
        refusal = "The pool is empty: every item is already in a round. Import or perturb more texts first."
    if refusal is not None:
        return None, pool_count, refusal
    head, seconds = detection.timed_train(training, seed=seed)
    timings["train"] = seconds
    began = time.perf_counter()
    p_h = head.p_h(candidates.vectors)
    timings["score"] = time.perf_counter() - began
    began = time.perf_counter()
    counts, source = _counts_for_ratio(project, number, seed, training, round_of, encoder)
    timings["ratio"] = time.perf_counter() - began
    scored = ScoredPool(
        ids=candidates.ids, p_h=p_h, paraphrase=candidates.paraphrase, swap=candidates.swap,
        trained_on=len(training.labels), trained_h=training.h, head=head, train_seconds=seconds,
        counts=counts, counts_source=source, timings=timings, training=training,
    )
    return scored, pool_count, None


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
    project: Project, number: int, seed: int, training: detection.TrainingSet, round_of: dict[int, int], encoder: str
) -> tuple[ConfusionCounts | None, str]:
    """Confusion counts for R and where they come from (in words); None counts when they cannot be had."""
    last = PairRound.objects.filter(project=project, number__lt=number).order_by("-number").first()
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
        p_h = detection.cross_validated_p_h(training.vectors, training.labels, seed=seed + 1)
    except ValueError as error:
        return None, (f"R is undefined: {why}, and cross-validation is not possible ({error}); "
                      "the round samples at random.")
    counts = detection.confusion_counts(training.labels, p_h)
    folds = min(detection.CV_FOLDS, training.h, training.n)
    return counts, (
        f"No earlier detector was scored on fresh items ({why}), so the counts are detector "
        f"{number - 1}'s {folds}-fold cross-validated predictions on its {len(training.labels)} training items: "
        "each item scored by a head trained without it."
    )
