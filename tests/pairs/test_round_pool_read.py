"""The round's pool is read chunk by chunk into one float16 matrix: the same arrays and scores, a fraction of the memory.

The wizard's fresh preview read every pool row with its blob, joined the blobs and made a
float32 copy: 170 MB of Python memory at 52,000 items for a 40 MB matrix.
"""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import numpy as np
import pytest
from django.conf import settings

from annotate.models import PairItem, PairRound, PerturbedText, Project
from annotate.services.pairs import detector, pool_scores
from tests.pairs.factories_rounds import add_items

pytestmark = pytest.mark.django_db

DIMENSION = 385  # MiniLM's 384 and the context feature, as the pairs encoder stores them


def add_random_items(project: Project, count: int, *, seed: int, labelled: bool = False) -> list[PairItem]:
    """``count`` items with random float16 vectors leaning along one axis by class (H when labelled H)."""
    rng = np.random.default_rng(seed)
    text = PerturbedText.objects.create(project=project, text="x", source=PerturbedText.Source.HADES)
    first = PairRound.objects.get_or_create(project=project, number=1, defaults={"size": 1, "seed": 1})[0]
    truth = rng.random(count) < 0.5
    vectors = rng.normal(size=(count, DIMENSION)).astype(np.float32)
    vectors[:, 0] += np.where(truth, 1.5, -1.5)
    swaps = ["", "date", "name", None]
    return PairItem.objects.bulk_create([
        PairItem(project=project, perturbed=text, position=index, perturbed_start=0, perturbed_end=1,
                 perturbed_words="x", vector=vectors[index].astype(np.float16).tobytes(),
                 vector_model=settings.PAIRS_ENCODER,
                 paraphrase_similarity=None if index % 7 == 0 else float(rng.random()),
                 swap_kind=swaps[index % 4],
                 state=PairItem.State.CONSENSUS if labelled else PairItem.State.POOL,
                 label=("H" if truth[index] else "N") if labelled else "", round=first if labelled else None)
        for index in range(count)
    ], batch_size=500)


def reference(project: Project) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pool as the one-query read had it: ids, float32 vectors, paraphrase (NaN for none), swap kinds."""
    rows = list(PairItem.objects.filter(project=project, state=PairItem.State.POOL).order_by("pk")
                .values_list("pk", "vector", "paraphrase_similarity", "swap_kind"))
    return (np.asarray([row[0] for row in rows], dtype=np.int64),
            detector.decode_vectors([row[1] for row in rows]),
            np.asarray([np.nan if row[2] is None else row[2] for row in rows], dtype=np.float64),
            np.asarray([row[3] or "" for row in rows], dtype=object))


def test_reading_in_chunks_gives_the_arrays_of_one_read(pairs_project: Project,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    add_random_items(pairs_project, 40, seed=1, labelled=True)
    add_random_items(pairs_project, 23, seed=2)
    monkeypatch.setattr(pool_scores, "READ_CHUNK", 5)  # 23 rows: four full chunks and a short one
    candidates, training, _, pool_size, refusal = pool_scores._load(pairs_project, settings.PAIRS_ENCODER)
    ids, vectors, paraphrase, swap = reference(pairs_project)
    assert refusal is None and pool_size == 23
    assert np.array_equal(candidates.ids, ids)
    assert candidates.vectors.dtype == np.float16 and np.array_equal(candidates.vectors.astype(np.float32), vectors)
    assert np.array_equal(candidates.paraphrase, paraphrase, equal_nan=True)
    assert list(candidates.swap) == list(swap)
    assert len(training.labels) == 40 and training.vectors.shape == (40, DIMENSION)


def test_the_pool_scores_equal_those_of_a_float32_copy(pairs_project: Project) -> None:
    add_random_items(pairs_project, 60, seed=3, labelled=True)
    add_random_items(pairs_project, 500, seed=4)
    scored, _, refusal = pool_scores.score_pool(pairs_project, number=2, seed=9, encoder=settings.PAIRS_ENCODER,
                                                min_counts=20)
    assert refusal is None and scored is not None
    ids, vectors, _, _ = reference(pairs_project)
    assert np.array_equal(scored.ids, ids)
    assert np.array_equal(scored.p_h, scored.head.p_h(vectors))  # bit for bit


def test_missing_and_empty_vectors_are_counted_as_before(pairs_project: Project) -> None:
    add_items(pairs_project, [-1.0, 1.0] * 10, state=PairItem.State.CONSENSUS, labels=["N", "H"] * 10)
    pool = add_items(pairs_project, [0.5] * 6)
    PairItem.objects.filter(pk=pool[0].pk).update(vector=None)
    PairItem.objects.filter(pk=pool[1].pk).update(vector=b"")
    PairItem.objects.filter(pk=pool[2].pk).update(vector_model="another-encoder")
    _, _, _, pool_size, refusal = pool_scores._load(pairs_project, settings.PAIRS_ENCODER)
    assert pool_size == 6
    assert refusal is not None and refusal.startswith(
        "3 of the 6 pool items and 0 of the 20 labelled items have no span vector from the encoder")


def test_vectors_of_different_lengths_are_refused(pairs_project: Project) -> None:
    add_items(pairs_project, [-1.0, 1.0] * 10, state=PairItem.State.CONSENSUS, labels=["N", "H"] * 10)
    pool = add_items(pairs_project, [0.5] * 4)
    PairItem.objects.filter(pk=pool[3].pk).update(vector=np.zeros(3, dtype=np.float16).tobytes())
    candidates, training, _, _, refusal = pool_scores._load(pairs_project, settings.PAIRS_ENCODER)
    assert refusal is not None and "have different lengths ([4, 6] bytes)" in refusal
    assert len(candidates.ids) == 0 and len(training.labels) == 0


def test_reading_the_pool_holds_little_more_than_its_matrix(pairs_project: Project,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    add_random_items(pairs_project, 40, seed=5, labelled=True)
    add_random_items(pairs_project, 4000, seed=6)
    monkeypatch.setattr(pool_scores, "READ_CHUNK", 250)
    pool_scores._load(pairs_project, settings.PAIRS_ENCODER)  # first-use imports and caches, not counted
    gc.collect()
    tracemalloc.start()
    try:
        candidates, *_ = pool_scores._load(pairs_project, settings.PAIRS_ENCODER)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    matrix = 4000 * DIMENSION * 2  # float16
    # The one-query read held every row with its blob, their join and a float32 copy: about 4.5 times this.
    assert peak < 1.6 * matrix, f"reading the pool peaked at {peak / matrix:.2f} times its float16 matrix"
    assert candidates.vectors.nbytes == matrix


def test_the_preview_shows_the_same_funnel_read_either_way(detector_project: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from annotate.services.pairs.funnel import preview_round

    whole = preview_round(detector_project, size=10, low=0.1, high=0.9, seed=3)
    monkeypatch.setattr(pool_scores, "READ_CHUNK", 3)
    chunked = preview_round(detector_project, size=10, low=0.1, high=0.9, seed=3)
    assert [step["count"] for step in chunked.funnel] == [step["count"] for step in whole.funnel]
    assert chunked.selected == whole.selected and chunked.funnel == whole.funnel
