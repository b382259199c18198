"""The detector head: numpy scoring equals scikit-learn's, stored without pickle, class-balanced, seeded, refusals."""

from __future__ import annotations

import io
import warnings
import zipfile

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier

from annotate.services.pairs import detector
from annotate.services.pairs.detector import (
    Head,
    confusion_counts,
    cross_validated_p_h,
    repeated_cross_validated_p_h,
    train_head,
)


def separable(count: int, h_share: float, seed: int, dimension: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """Two overlapping clouds: H around +direction, N around -direction."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(count) < h_share).astype(np.int64)
    direction = rng.normal(size=dimension)
    vectors = rng.normal(size=(count, dimension)) + 0.8 * np.outer(2 * labels - 1, direction)
    return vectors.astype(np.float32), labels


def test_numpy_scoring_equals_scikit_learns_predict_proba_of_the_same_network() -> None:
    vectors, labels = separable(300, 0.6, seed=1)
    head = train_head(vectors, labels, seed=3)
    # The same network fitted by scikit-learn directly, on the same standardised vectors and weights.
    mean, scale = vectors.mean(axis=0), vectors.std(axis=0)
    reference = MLPClassifier(hidden_layer_sizes=(detector.HIDDEN,), solver="lbfgs", alpha=detector.L2,
                              max_iter=detector.MAX_ITERATIONS, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference.fit((vectors - mean) / scale, labels, sample_weight=detector.class_weights(labels))
    fresh, _ = separable(50, 0.5, seed=2)
    expected = reference.predict_proba((fresh - mean) / scale)[:, 1]
    assert head.p_h(fresh) == pytest.approx(expected, abs=1e-5)


def test_the_head_is_stored_as_plain_npz_and_loads_back_without_pickle() -> None:
    vectors, labels = separable(120, 0.5, seed=4)
    head = train_head(vectors, labels, seed=1)
    stored = head.to_bytes()
    with zipfile.ZipFile(io.BytesIO(stored)) as archive:
        assert sorted(archive.namelist()) == ["b1.npy", "b2.npy", "mean.npy", "scale.npy", "w1.npy", "w2.npy"]
    with np.load(io.BytesIO(stored), allow_pickle=False) as arrays:
        assert arrays["w1"].shape == (12, detector.HIDDEN) and arrays["w2"].shape == (detector.HIDDEN, 1)
    loaded = Head.from_bytes(memoryview(stored))
    assert loaded.p_h(vectors) == pytest.approx(head.p_h(vectors))


def test_the_same_items_and_seed_give_the_same_head() -> None:
    vectors, labels = separable(150, 0.7, seed=5)
    assert train_head(vectors, labels, seed=9).to_bytes() == train_head(vectors, labels, seed=9).to_bytes()


def test_class_weights_give_each_class_half_the_weight() -> None:
    labels = np.asarray([1] * 9 + [0])
    weights = detector.class_weights(labels)
    assert weights[labels == 1].sum() == pytest.approx(5.0) and weights[labels == 0].sum() == pytest.approx(5.0)


def test_a_lopsided_training_set_does_not_teach_the_head_to_say_h_always() -> None:
    vectors, labels = separable(400, 0.9, seed=6)
    test_vectors, test_labels = separable(400, 0.5, seed=6)  # same direction (same seed), balanced
    p_h = train_head(vectors, labels, seed=1).p_h(test_vectors)
    recall_n = float(((p_h < 0.5) & (test_labels == 0)).sum() / (test_labels == 0).sum())
    assert recall_n > 0.8


def test_one_class_cannot_be_trained() -> None:
    vectors, _ = separable(30, 0.5, seed=1)
    with pytest.raises(ValueError, match="both classes"):
        train_head(vectors, np.ones(30, dtype=np.int64), seed=1)


def test_scoring_vectors_of_another_length_is_an_error_naming_both() -> None:
    vectors, labels = separable(60, 0.5, seed=1)
    head = train_head(vectors, labels, seed=1)
    with pytest.raises(ValueError, match=r"\(3, 5\) do not fit a head of dimension 12"):
        head.p_h(np.zeros((3, 5), dtype=np.float32))


def test_cross_validation_scores_every_item_once_and_needs_two_of_each_class() -> None:
    vectors, labels = separable(80, 0.5, seed=8)
    p_h = cross_validated_p_h(vectors, labels, seed=2)
    assert p_h.shape == (80,) and np.all((p_h >= 0) & (p_h <= 1))
    assert float(((p_h >= 0.5) == (labels == 1)).mean()) > 0.8  # held out, still far better than chance
    with pytest.raises(ValueError, match="the smaller class has 1"):
        cross_validated_p_h(vectors[:21], np.asarray([1] * 20 + [0]), seed=2)


def test_repeated_cross_validation_scores_every_item_once_per_split_and_the_splits_differ() -> None:
    vectors, labels = separable(40, 0.5, seed=3)
    p_h = repeated_cross_validated_p_h(vectors, labels, seed=4, repeats=3)
    assert p_h.shape == (3, 40) and np.all((p_h >= 0) & (p_h <= 1))
    # Other fold splits train other heads, so an item's held-out P(H) differs between splits.
    assert not np.allclose(p_h[0], p_h[1]) and not np.allclose(p_h[1], p_h[2])
    # The same seed gives the same splits and heads; the first split is what one split alone gives.
    assert np.array_equal(p_h, repeated_cross_validated_p_h(vectors, labels, seed=4, repeats=3))
    assert np.array_equal(p_h[0], cross_validated_p_h(vectors, labels, seed=4))
    with pytest.raises(ValueError, match="repeats must be 1 or more, not 0"):
        repeated_cross_validated_p_h(vectors, labels, seed=4, repeats=0)


def test_few_labelled_items_are_cross_validated_over_several_splits_and_many_over_one() -> None:
    assert detector.cv_repeats(31) == detector.CV_REPEATS > 1
    assert detector.cv_repeats(detector.CV_REPEAT_UP_TO) == detector.CV_REPEATS
    assert detector.cv_repeats(detector.CV_REPEAT_UP_TO + 1) == 1


def test_nested_one_blas_thread_limits_once() -> None:
    with detector.one_blas_thread():
        with detector.one_blas_thread():
            assert detector._blas.limited
        assert detector._blas.limited  # the inner exit leaves the outer limit in place
    assert not detector._blas.limited


def test_confusion_counts_by_hand() -> None:
    labels = np.asarray([1, 1, 1, 0, 0, 1, 0])
    p_h = np.asarray([0.9, 0.5, 0.2, 0.7, 0.1, 0.49, 0.5])
    assert confusion_counts(labels, p_h) == (2, 2, 1, 2)  # TP, FP, TN, FN; 0.5 counts as predicted H


def test_training_refusals_name_the_numbers() -> None:
    assert detector.training_refusal(25, 10, 20) is None
    few = detector.training_refusal(7, 4, 20)
    assert few is not None and "7 consensus or imported-label items (4 H, 3 N)" in few and "at least 20" in few
    one = detector.training_refusal(30, 0, 20)
    assert one is not None and "0 H and 30 N" in one and "at least one H item" in one


def test_decode_vectors_reads_float16_rows() -> None:
    rows = [np.asarray([1.5, -2.0, 0.25], dtype=np.float16).tobytes(), np.zeros(3, dtype=np.float16).tobytes()]
    assert detector.decode_vectors(rows).tolist() == [[1.5, -2.0, 0.25], [0.0, 0.0, 0.0]]
