"""Items with set span vectors, states, labels, paraphrase similarities and swap kinds, for the round tests.

A vector here is [t, 1]: the position t on one axis decides what the detector
learns. Training items at t = -2, -1, 0, 1, 2 with 0, 2, 4, 6, 8 H out of 8
teach a head P(H) of about 0, 0.25, 0.5, 0.75 and 1 at those positions (the
share of H at each), so pool items at t = -1 and 1 fall inside a [0.1, 0.9]
band, predicted N and H, and those at -2 and 2 fall outside it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.conf import settings

from annotate.models import PairDetector, PairItem, PairRound, PerturbedText, Project
from annotate.services.pairs.detector import Head

# Labelled items per position: (H, N). 20 H and 20 N in all.
TRAINING = {-2: (0, 8), -1: (2, 6), 0: (4, 4), 1: (6, 2), 2: (8, 0)}


def vector_bytes(t: float) -> bytes:
    return np.asarray([t, 1.0], dtype=np.float16).tobytes()


def add_items(
    project: Project,
    positions: list[float],
    *,
    state: str = PairItem.State.POOL,
    labels: list[str] | None = None,
    pair_round: PairRound | None = None,
    paraphrase: list[float | None] | None = None,
    swaps: list[str] | None = None,
    encoder: str | None = None,
) -> list[PairItem]:
    """One item per position, all in one perturbed text, with vector [t, 1] from ``encoder`` (the default one)."""
    text = PerturbedText.objects.create(project=project, text="x " * max(1, len(positions)),
                                        source=PerturbedText.Source.HADES)
    items = [
        PairItem(
            project=project, perturbed=text, position=index, external_id=f"t{t}-{index}",
            perturbed_start=2 * index, perturbed_end=2 * index + 1, perturbed_words="x",
            state=state, label=labels[index] if labels else "", round=pair_round,
            vector=vector_bytes(t), vector_model=encoder or settings.PAIRS_ENCODER,
            paraphrase_similarity=paraphrase[index] if paraphrase else 0.5,
            swap_kind=swaps[index] if swaps else "",
        )
        for index, t in enumerate(positions)
    ]
    return PairItem.objects.bulk_create(items)


def add_training(project: Project, per_position: dict[int, tuple[int, int]], **extra: Any) -> list[PairItem]:
    """Labelled items: at each position t, (H, N) of them."""
    positions: list[float] = []
    labels: list[str] = []
    for t, (h, n) in per_position.items():
        positions += [t] * (h + n)
        labels += ["H"] * h + ["N"] * n
    extra.setdefault("state", PairItem.State.CONSENSUS)
    return add_items(project, positions, labels=labels, **extra)


def sign_head(steepness: float = 4.0) -> Head:
    """A hand-built head on [t, 1] vectors: P(H) = logistic(steepness * t), predicted H exactly when t >= 0."""
    return Head(
        mean=np.zeros(2, dtype=np.float32),
        scale=np.ones(2, dtype=np.float32),
        w1=np.asarray([[1.0, -1.0], [0.0, 0.0]], dtype=np.float32),  # hidden: relu(t), relu(-t)
        b1=np.zeros(2, dtype=np.float32),
        w2=np.asarray([[steepness], [-steepness]], dtype=np.float32),
        b2=np.zeros(1, dtype=np.float32),
    )


def store_detector(project: Project, number: int, head: Head, encoder: str | None = None) -> PairDetector:
    return PairDetector.objects.create(project=project, number=number, encoder=encoder or settings.PAIRS_ENCODER,
                                       trained_on=40, trained_h=20, head=head.to_bytes())


def add_noisy_round_one(project: Project, *, separation: float, data_seed: int) -> PairRound:
    """Round 1 with 31 consensus items (17 H, 14 N) whose 4-d vectors lean by +-separation along one axis, and a pool.

    Few items and a detector that errs often: the case where which items
    share a cross-validation fold moves the counts for R. Separation 1.0
    makes a fair detector, 0.6 one close to chance.
    """
    rng = np.random.default_rng(data_seed)
    labels = np.asarray([1] * 17 + [0] * 14)
    vectors = rng.normal(size=(len(labels), 4)).astype(np.float32)
    vectors[:, 0] += np.where(labels == 1, separation, -separation)
    first = PairRound.objects.create(project=project, number=1, size=len(labels), seed=1)
    items = add_items(project, [0.0] * len(labels), state=PairItem.State.CONSENSUS, pair_round=first,
                      labels=["H" if label else "N" for label in labels])
    for item, vector in zip(items, vectors, strict=True):
        PairItem.objects.filter(pk=item.pk).update(vector=vector.astype(np.float16).tobytes())
    pool = add_items(project, [0.0] * 4)
    PairItem.objects.filter(pk__in=[item.pk for item in pool]).update(vector=vectors[0].astype(np.float16).tobytes())
    return first
