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
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Count, Q

from annotate.models import PairItem, PairRound, Project
from annotate.services.pairs import detector as detection

ConfusionCounts = tuple[int, int, int, int]


@dataclass(frozen=True)
class CrossValidation:
    """How cross-validated counts for R were made; the page shows it, since the counts move with the fold split.

    ``per_split`` holds each split's own counts over the ``items`` counted
    items; the counts for R are their sums, so each item counts ``repeats``
    times. ``seed`` is the round's seed, from which the splits are drawn.
    """

    folds: int
    repeats: int
    seed: int
    items: int
    trained_on: int
    per_split: tuple[ConfusionCounts, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"folds": self.folds, "repeats": self.repeats, "seed": self.seed, "items": self.items,
                "trained_on": self.trained_on, "per_split": [list(counts) for counts in self.per_split]}


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
    cross_validation: CrossValidation | None = None  # set when the counts are cross-validated (round 2)
    timings: dict[str, float] = field(default_factory=dict)
    # The labelled items the head was trained on; only a fresh score has them (a round stores its detector from them).
    training: detection.TrainingSet | None = field(default=None, repr=False)

    @property
    def trained_n(self) -> int:
        return self.trained_on - self.trained_h

    @property
    def counted_items(self) -> int | None:
        """How many labelled items the counts come from when each counts more than once; None when once."""
        return self.cross_validation.items if self.cross_validation is not None else None


@dataclass
class _Candidates:
    """The pool items with their vectors and the features the funnel reads, in id order.

    ``vectors`` holds the stored float16 values as they are: Head.p_h turns each block of
    rows into float32 (exactly), so the scores are those of a float32 copy at half its memory.
    """

    ids: np.ndarray
    vectors: np.ndarray
    paraphrase: np.ndarray
    swap: np.ndarray


# Pool rows fetched at a time while their vectors are copied into the pool's matrix.
READ_CHUNK = 2_000


class _PoolReader:
    """The pool's rows, chunk by chunk, into preallocated arrays: one float16 matrix, the ids, the two features.

    No per-item object outlives its chunk: at 52,000 items the rows, their blobs, a joined
    copy and a float32 copy held 170 MB at once; the matrix alone is 40 MB.
    """

    def __init__(self, expected: int) -> None:
        self.size = 0
        self.ids = np.empty(expected, dtype=np.int64)
        self.paraphrase = np.empty(expected, dtype=np.float64)
        self.swap = np.empty(expected, dtype=object)
        self.vectors: np.ndarray | None = None  # allocated at the first vector, whose length gives the width
        self.lengths: set[int] = set()  # byte lengths of the vectors seen; more than one cannot be scored

    def add(self, rows: list[tuple[int, bytes | memoryview, float | None, str | None]]) -> None:
        count = len(rows)
        self._make_room(count, len(rows[0][1]))
        at, end = self.size, self.size + count
        self.ids[at:end] = [row[0] for row in rows]
        self.paraphrase[at:end] = [np.nan if row[2] is None else row[2] for row in rows]
        self.swap[at:end] = [row[3] or "" for row in rows]
        lengths = {len(row[1]) for row in rows}
        self.lengths |= lengths
        if len(self.lengths) == 1 and self.vectors is not None:
            # bytes.join takes PostgreSQL's memoryviews as they are: no copy per item.
            self.vectors[at:end] = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float16).reshape(count, -1)
        self.size = end

    def _make_room(self, count: int, first_length: int) -> None:
        if self.vectors is None:
            self.vectors = np.empty((len(self.ids), first_length // 2), dtype=np.float16)
        if self.size + count <= len(self.ids):
            return
        # More rows than counted a moment ago (an import meanwhile): grow, rarely.
        capacity = max(2 * len(self.ids), self.size + count)
        self.ids, self.paraphrase, self.swap = (
            _grown(self.ids, capacity), _grown(self.paraphrase, capacity), _grown(self.swap, capacity)
        )
        self.vectors = _grown(self.vectors, capacity)

    def candidates(self, usable: bool) -> _Candidates:
        """What was read (nothing when the vectors cannot be scored together)."""
        size = self.size if usable else 0
        width = self.vectors.shape[1] if self.vectors is not None else 0
        vectors = self.vectors[:size] if self.vectors is not None else np.zeros((0, width), dtype=np.float16)
        return _Candidates(ids=self.ids[:size], vectors=vectors, paraphrase=self.paraphrase[:size],
                           swap=self.swap[:size])


def _grown(array: np.ndarray, capacity: int) -> np.ndarray:
    grown = np.empty((capacity, *array.shape[1:]), dtype=array.dtype)
    grown[: len(array)] = array
    return grown


def score_pool(
    project: Project, *, number: int, seed: int, encoder: str, min_counts: int
) -> tuple[ScoredPool | None, int, str | None]:
    """Train detector ``number - 1`` on every labelled item, score the pool and get the counts for R.

    Returns (the scored pool, the pool's size, None), or (None, the pool's size,
    why it cannot be done) with nothing trained: missing vectors, too few
    labelled items, one class only, an empty pool. The pool's size counts every
    pool item, those still waiting for their span vector too.
    """
    timings: dict[str, float] = {}
    began = time.perf_counter()
    candidates, training, round_of, pool_count, refusal = _load(project, encoder)
    timings["read"] = time.perf_counter() - began
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
    counts, source, cross_validation = _counts_for_ratio(project, number, seed, training, round_of, encoder)
    timings["ratio"] = time.perf_counter() - began
    scored = ScoredPool(
        ids=candidates.ids, p_h=p_h, paraphrase=candidates.paraphrase, swap=candidates.swap,
        trained_on=len(training.labels), trained_h=training.h, head=head, train_seconds=seconds,
        counts=counts, counts_source=source, cross_validation=cross_validation, timings=timings,
        training=training,
    )
    return scored, pool_count, None


def _load(
    project: Project, encoder: str
) -> tuple[_Candidates, detection.TrainingSet, dict[int, int], int, str | None]:
    """Pool items and labelled items with their vectors, the pool's size; a refusal when some vectors are missing.

    The size is that of the whole pool: an item waiting for its vector is still in the pool, and the funnel
    says so rather than show a pool of 0. Three queries: the counts, the pool's vectors and features (streamed
    into one matrix, only the columns the funnel reads), the labelled items' vectors.
    """
    items = PairItem.objects.filter(project=project)
    labelled = Q(state__in=detection.TRAINED_STATES, label__in=("H", "N"))
    with_vector = Q(vector_model=encoder, vector__isnull=False)
    sizes = items.aggregate(
        pool=Count("id", filter=Q(state=PairItem.State.POOL)),
        pool_with_vector=Count("id", filter=Q(state=PairItem.State.POOL) & with_vector),
        labelled=Count("id", filter=labelled),
    )
    reader = _PoolReader(sizes["pool_with_vector"])
    chunk: list[tuple[int, bytes | memoryview, float | None, str | None]] = []
    pool_rows = (
        items.filter(with_vector, state=PairItem.State.POOL)
        .order_by("pk")
        .values_list("pk", "vector", "paraphrase_similarity", "swap_kind")
        .iterator(chunk_size=READ_CHUNK)
    )
    # Inside a transaction PostgreSQL streams the rows from a plain server-side cursor; outside one, Django
    # declares it WITH HOLD, which makes the server copy the whole result before the first row.
    with transaction.atomic():
        for row in pool_rows:
            if len(row[1]):  # an empty blob is no vector
                chunk.append(row)
            if len(chunk) == READ_CHUNK:
                reader.add(chunk)
                chunk = []
    if chunk:
        reader.add(chunk)
    train_rows = [
        row for row in items.filter(labelled & with_vector).order_by("pk")
        .values_list("pk", "state", "label", "round_id", "vector")
        if len(row[4])
    ]
    missing_pool = sizes["pool"] - reader.size
    missing_train = sizes["labelled"] - len(train_rows)
    refusal = None
    if missing_pool or missing_train:
        refusal = (
            f"{missing_pool} of the {sizes['pool']} pool items and {missing_train} of the {sizes['labelled']} "
            f"labelled items have no span vector from the encoder {encoder!r} yet: compute the span vectors "
            "first (the round job and `pairs_round` compute them before drawing a round)."
        )
    lengths = reader.lengths | {len(row[4]) for row in train_rows}
    usable = len(lengths) <= 1
    if not usable:
        train_rows = []
        if refusal is None:
            refusal = (f"The kept span vectors of encoder {encoder!r} have different lengths ({sorted(lengths)} "
                       "bytes): compute them again (clear the items' vector_model).")
    training = detection.TrainingSet(
        item_ids=[row[0] for row in train_rows],
        vectors=detection.decode_vectors([row[4] for row in train_rows]),
        labels=np.asarray([1 if row[2] == "H" else 0 for row in train_rows], dtype=np.int64),
    )
    round_of = {row[0]: row[3] for row in train_rows if row[1] == PairItem.State.CONSENSUS}
    return reader.candidates(usable), training, round_of, sizes["pool"], refusal


def _counts_for_ratio(
    project: Project, number: int, seed: int, training: detection.TrainingSet, round_of: dict[int, int], encoder: str
) -> tuple[ConfusionCounts | None, str, CrossValidation | None]:
    """Confusion counts for R, where they come from (in words), and how they were cross-validated if they were.

    DESIGN.md takes the counts from the detector's predictions on the last
    round's consensus items. From round 3 on, the previous detector selected
    those items and was not trained on them, so its predictions are used as
    they are. In round 2 (or after an encoder change) no such detector
    exists, and the new one is trained on those very items: its predictions on
    them would count only training errors, so they are cross-validated instead
    (annotate.services.pairs.detector.cv_repeats says how many splits).
    """
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
            ), None
    why = (f"round {last.number} was drawn at random" if last is not None and previous is None
           else "the previous detector used another encoder")
    return _cross_validated_counts(number, seed, training, round_of, last, why)


def _cross_validated_counts(
    number: int, seed: int, training: detection.TrainingSet, round_of: dict[int, int], last: PairRound | None,
    why: str,
) -> tuple[ConfusionCounts | None, str, CrossValidation | None]:
    """Counts for R from out-of-fold predictions on the last round's consensus items, summed over fold splits."""
    counted = [index for index, item_id in enumerate(training.item_ids)
               if last is None or round_of.get(item_id) == last.pk]
    counted_words = (f"the {len(counted)} consensus items of round {last.number}" if last is not None
                     else f"the {len(counted)} labelled items")
    if not counted:
        return None, (f"R is undefined: {why}, and there are no consensus items of round {number - 1} to count "
                      "the detector's errors on; the round samples at random."), None
    repeats = detection.cv_repeats(len(training.labels))
    try:
        # seed + 1: the fold heads are seeded apart from the detector itself, which trains with the round's seed.
        p_h = detection.repeated_cross_validated_p_h(training.vectors, training.labels, seed=seed + 1,
                                                     repeats=repeats)
    except ValueError as error:
        return None, (f"R is undefined: {why}, and cross-validation is not possible ({error}); "
                      "the round samples at random."), None
    labels = training.labels[counted]
    per_split = tuple(detection.confusion_counts(labels, scores[counted]) for scores in p_h)
    tp, fp, tn, fn = (int(sum(column)) for column in zip(*per_split, strict=True))
    folds = min(detection.CV_FOLDS, training.h, training.n)
    others = len(training.labels) - len(counted)
    trained = f"the {len(training.labels)} labelled items" + (
        f" ({others} of them imported labels or earlier rounds' items, used for training only)" if others else "")
    repeated = (f" The split is redone {repeats} times and the counts summed, so each counted item counts "
                f"{repeats} times." if repeats > 1 else "")
    source = (
        f"No earlier detector was scored on fresh items ({why}), and detector {number - 1} is trained on "
        f"{counted_words}, so its own predictions on them would count only its training errors. The counts are "
        f"cross-validated instead: {trained} are split at random into {folds} folds with the round's seed "
        f"({seed}), each fold is scored by a head trained on the other folds, and the predictions on "
        f"{counted_words} are counted.{repeated}"
    )
    cross_validation = CrossValidation(folds=folds, repeats=repeats, seed=seed, items=len(counted),
                                       trained_on=len(training.labels), per_split=per_split)
    return (tp, fp, tn, fn), source, cross_validation
