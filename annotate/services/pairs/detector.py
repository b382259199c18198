"""The round wizard's detector: a small head trained on the kept span vectors, H = 1.

The head is scikit-learn's MLPClassifier with one hidden layer (input ->
HIDDEN ReLU units -> P(H)) over standardised vectors: the "two-layer head"
DESIGN.md describes on top of a frozen encoder. Chosen over logistic regression
because the paper's head has a hidden layer and the context feature and span
vector interact (an incoherent word is one whose vector disagrees with its
context), which a linear model cannot express; logistic regression was not
shown to be as good on labelled HaDes data (none is in reach offline), so the
paper's shape stays. It is small and trains in about a second on a few
thousand items, so it is simply retrained for every round.

Class balance: each class gets half of the total sample weight, so a pool that
is 90% H (as HaDes' first rounds were) does not teach the head to say H always.
Seeded: the same items and seed give the same head.

The trained head is stored as numpy ``.npz`` bytes (standardisation, two weight
matrices, two bias vectors) and loaded back with ``allow_pickle=False``; scoring
is four numpy operations, with no scikit-learn object kept anywhere.

BLAS runs on one thread here: these matrices are small, and on a machine whose
other core is busy (a web worker, PostgreSQL) two BLAS threads made training
ten times slower (2.7 s against 0.28 s for 3,000 x 385 items), not faster.
"""

from __future__ import annotations

import io
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from annotate.models import PairDetector, PairItem, Project

HIDDEN = 64
L2 = 1e-3
MAX_ITERATIONS = 300
THRESHOLD = 0.5  # P(H) at or above which the detector predicts H
CV_FOLDS = 5
CV_REPEATS = 5  # fold splits whose counts are summed for R (see cv_repeats)
CV_REPEAT_UP_TO = 500
TRAINED_STATES = (PairItem.State.CONSENSUS, PairItem.State.LABELLED)


_blas = threading.local()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS on one thread (see the module docstring); nested uses cost nothing.

    Entering threadpoolctl's limit scans the loaded libraries (about 2 ms);
    the 25 fits and scorings of a repeated cross-validation enter it once.
    """
    if getattr(_blas, "limited", False):
        yield
        return
    _blas.limited = True
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        _blas.limited = False


class RoundRefused(Exception):
    """A round cannot be drawn (too few labelled items, one class only, an empty pool...); the message says why.

    Defined here because training the detector is where the commonest refusal
    comes from; annotate.services.pairs.rounds re-exports it.
    """


@dataclass(frozen=True)
class Head:
    """A trained head: standardisation, then ReLU(x W1 + b1) W2 + b2, then the logistic function."""

    mean: np.ndarray
    scale: np.ndarray
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray

    @property
    def dimension(self) -> int:
        return int(self.mean.shape[0])

    def p_h(self, vectors: np.ndarray) -> np.ndarray:
        """P(H) of each row of ``vectors`` (float16 or float32 rows of the head's dimension; float32 inside)."""
        if vectors.ndim != 2 or vectors.shape[1] != self.dimension:
            raise ValueError(f"vectors of shape {vectors.shape} do not fit a head of dimension {self.dimension}")
        scores = np.empty(len(vectors), dtype=np.float64)
        # In blocks: a 100,000-row pool never needs a 100,000 x HIDDEN float64 matrix at once.
        with one_blas_thread():
            self._score_blocks(vectors, scores)
        return scores

    def _score_blocks(self, vectors: np.ndarray, scores: np.ndarray) -> None:
        for at in range(0, len(vectors), 20_000):
            # One float32 copy of the block, standardised in place: no second and third copy of it.
            block = vectors[at : at + 20_000].astype(np.float32)
            block -= self.mean
            block /= self.scale
            hidden = np.maximum(block @ self.w1 + self.b1, 0.0)
            logit = (hidden @ self.w2 + self.b2).astype(np.float64).ravel()
            scores[at : at + 20_000] = 0.5 * (1.0 + np.tanh(0.5 * logit))  # the logistic function, without overflow

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        np.savez(buffer, mean=self.mean, scale=self.scale, w1=self.w1, b1=self.b1, w2=self.w2, b2=self.b2)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes | memoryview) -> Head:
        with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as stored:
            return cls(**{name: stored[name].astype(np.float32) for name in ("mean", "scale", "w1", "b1", "w2", "b2")})


def class_weights(labels: np.ndarray) -> np.ndarray:
    """Per-item weights giving each class half of the total weight (mean weight 1)."""
    weights = np.empty(len(labels), dtype=np.float64)
    for value in (0, 1):
        members = labels == value
        if members.any():
            weights[members] = len(labels) / (2.0 * members.sum())
    return weights


def train_head(vectors: np.ndarray, labels: np.ndarray, *, seed: int) -> Head:
    """Fit the head on float32 ``vectors`` and 0/1 ``labels`` (1 = H), class-balanced and seeded."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    labels = np.asarray(labels, dtype=np.int64)
    if len(set(labels.tolist())) < 2:
        raise ValueError("the head needs items of both classes to train")
    x = np.asarray(vectors, dtype=np.float32)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-6] = 1.0  # a constant feature: leave it centred, do not blow it up
    # L-BFGS: full-batch, no learning rate to tune, and for a few thousand items both faster and steadier than
    # minibatch Adam (0.2 s against 0.5 s for 30 Adam epochs on 3,000 x 385, same held-out accuracy).
    classifier = MLPClassifier(
        hidden_layer_sizes=(HIDDEN,),
        activation="relu",
        solver="lbfgs",
        alpha=L2,
        max_iter=MAX_ITERATIONS,
        random_state=seed % (2**32),
    )
    with warnings.catch_warnings(), one_blas_thread():
        # The iteration cap bounds the time per round; stopping at it before sklearn's tolerance is harmless.
        warnings.simplefilter("ignore", ConvergenceWarning)
        classifier.fit((x - mean) / scale, labels, sample_weight=class_weights(labels))
    w1, w2 = classifier.coefs_
    b1, b2 = classifier.intercepts_
    return Head(mean=mean, scale=scale, w1=w1.astype(np.float32), b1=b1.astype(np.float32),
                w2=w2.astype(np.float32), b2=b2.astype(np.float32))


def cv_repeats(items: int) -> int:
    """How many fold splits to sum for R over ``items`` training items.

    With a few dozen items, which items share a fold moves each count by
    several units, and R with them: a review saw seed 7 give R = 1.6 and
    another seed R = 4 on the demo. Summing ``CV_REPEATS`` splits shrinks that
    spread (to about a third on tests/pairs' built case) for 25 small fits:
    0.6 s on the demo's 25 labelled items (two busy cores), against 0.15 s
    for one split. It cannot steady R where the detector is close to chance
    (TP - FP near 0): the page then says the splits disagree. Past
    ``CV_REPEAT_UP_TO`` items one split moves the counts by a few percent,
    and repeats would add seconds to each fresh preview, so one is used.
    """
    return CV_REPEATS if items <= CV_REPEAT_UP_TO else 1


def repeated_cross_validated_p_h(
    vectors: np.ndarray, labels: np.ndarray, *, seed: int, folds: int = CV_FOLDS, repeats: int = 1
) -> np.ndarray:
    """P(H) of each training item from heads trained without it, once per fold split: shape (repeats, items).

    Each row is one stratified ``folds``-fold split (scikit-learn's
    RepeatedStratifiedKFold, seeded), so every item is scored once per row.
    Held-out scores are the honest estimate of how the detector errs on items
    it has not seen; scoring the training items with the head trained on them
    would count only its training errors, which are few.
    Raises ValueError when a class has fewer than two items (no folds possible).
    """
    from sklearn.model_selection import RepeatedStratifiedKFold

    labels = np.asarray(labels, dtype=np.int64)
    smallest = int(min((labels == 0).sum(), (labels == 1).sum()))
    if smallest < 2:
        raise ValueError(f"cross-validation needs at least 2 items of each class; the smaller class has {smallest}")
    if repeats < 1:
        raise ValueError(f"repeats must be 1 or more, not {repeats}")
    n_splits = min(folds, smallest)
    splitter = RepeatedStratifiedKFold(n_splits=n_splits, n_repeats=repeats, random_state=seed % (2**32))
    scores = np.empty((repeats, len(labels)), dtype=np.float64)
    with one_blas_thread():
        for index, (train, test) in enumerate(splitter.split(vectors, labels)):
            head = train_head(vectors[train], labels[train], seed=seed + index)
            scores[index // n_splits, test] = head.p_h(vectors[test])
    return scores


def cross_validated_p_h(vectors: np.ndarray, labels: np.ndarray, *, seed: int, folds: int = CV_FOLDS) -> np.ndarray:
    """P(H) of each training item from a head trained without it: one seeded stratified fold split."""
    return repeated_cross_validated_p_h(vectors, labels, seed=seed, folds=folds, repeats=1)[0]


def confusion_counts(labels: np.ndarray, p_h: np.ndarray, threshold: float = THRESHOLD) -> tuple[int, int, int, int]:
    """(TP, FP, TN, FN) with H positive: predicted H when P(H) >= threshold."""
    labels = np.asarray(labels, dtype=np.int64)
    predicted = np.asarray(p_h) >= threshold
    actual = labels == 1
    return (int((predicted & actual).sum()), int((predicted & ~actual).sum()),
            int((~predicted & ~actual).sum()), int((~predicted & actual).sum()))


def decode_vectors(blobs: list[bytes | memoryview]) -> np.ndarray:
    """Stored float16 vectors (all of one length) as a float32 matrix, one row each."""
    if not blobs:
        return np.zeros((0, 0), dtype=np.float32)
    joined = b"".join(blobs)  # memoryviews (PostgreSQL) join as they are, without a copy each
    return np.frombuffer(joined, dtype=np.float16).reshape(len(blobs), -1).astype(np.float32)


@dataclass
class TrainingSet:
    """Consensus and imported-label items with their vectors, labels 1 = H."""

    item_ids: list[int]
    vectors: np.ndarray
    labels: np.ndarray

    @property
    def h(self) -> int:
        return int(self.labels.sum())

    @property
    def n(self) -> int:
        return len(self.labels) - self.h


def training_refusal(labelled: int, h: int, min_counts: int) -> str | None:
    """Why a detector cannot be trained on these labelled items, with the numbers; None when it can."""
    n = labelled - h
    if labelled < min_counts:
        return (
            f"Too few labelled items to train the detector: {labelled} consensus or imported-label items "
            f"({h} H, {n} N), and it needs at least {min_counts} (the project's min_counts). Let the open round "
            "reach consensus on more items, or import labelled items."
        )
    if h == 0 or n == 0:
        missing = "H" if h == 0 else "N"
        return (
            f"The detector cannot be trained on one class only: the {labelled} labelled items are {h} H and "
            f"{n} N, and it needs at least one {missing} item."
        )
    return None


def save_detector(
    project: Project, number: int, encoder: str, head: Head, training: TrainingSet, train_seconds: float
) -> PairDetector:
    """Store detector ``number`` (trained before round number + 1), replacing one of that number if any."""
    detector, _ = PairDetector.objects.update_or_create(
        project=project, number=number,
        defaults={"encoder": encoder, "trained_on": len(training.labels), "trained_h": training.h,
                  "head": head.to_bytes(), "train_seconds": round(train_seconds, 3)},
    )
    return detector


def load_head(detector: PairDetector) -> Head:
    return Head.from_bytes(detector.head)


def timed_train(training: TrainingSet, *, seed: int) -> tuple[Head, float]:
    began = time.perf_counter()
    head = train_head(training.vectors, training.labels, seed=seed)
    return head, time.perf_counter() - began
