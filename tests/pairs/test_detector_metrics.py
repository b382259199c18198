"""Detector metrics (HaDes tables) by hand on small cases and against scikit-learn on random ones."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import (
    accuracy_score,
    brier_score_loss,
    f1_score,
    precision_score,
    recall_score,
    roc_auc_score,
)

from annotate.pairmath.metrics import METRIC_KEYS, detector_metrics


def test_small_case_by_hand() -> None:
    # labels  1    1    1    0    0    0    0
    # p_h    .9   .6   .3   .7   .2   .1   .5   -> predicted (>= .5): 1 1 0 1 0 0 1
    # TP = 2, FN = 1, FP = 2, TN = 2.
    labels = [1, 1, 1, 0, 0, 0, 0]
    p_h = [0.9, 0.6, 0.3, 0.7, 0.2, 0.1, 0.5]
    metrics = detector_metrics(labels, p_h)
    assert set(metrics) == set(METRIC_KEYS)
    assert metrics["n"] == 7
    assert metrics["accuracy"] == pytest.approx(4 / 7)
    assert metrics["precision_h"] == pytest.approx(2 / 4)  # TP / (TP+FP)
    assert metrics["recall_h"] == pytest.approx(2 / 3)  # TP / (TP+FN)
    assert metrics["f1_h"] == pytest.approx(4 / 7)  # 2*2 / (2*2 + 2 + 1)
    assert metrics["precision_n"] == pytest.approx(2 / 3)  # TN / (TN+FN)
    assert metrics["recall_n"] == pytest.approx(2 / 4)  # TN / (TN+FP)
    assert metrics["f1_n"] == pytest.approx(4 / 7)  # 2*2 / (2*2 + 1 + 2)
    assert metrics["g_mean"] == pytest.approx(math.sqrt(2 / 3 * 2 / 4))
    # AUC: H scores .9 .6 .3 vs N scores .7 .2 .1 .5; pairs won by H: .9 beats 4, .6 beats 3, .3 beats 2 -> 9 of 12.
    assert metrics["auc"] == pytest.approx(9 / 12)
    # Brier: (.1² + .4² + .7² + .7² + .2² + .1² + .5²) / 7 = (.01+.16+.49+.49+.04+.01+.25)/7 = 1.45/7.
    assert metrics["brier"] == pytest.approx(1.45 / 7)


def test_ties_in_p_h_count_half_in_auc() -> None:
    # H at .5 and .8, N at .5 and .2: pairs (.5,.5) tie = 0.5, (.5,.2) win, (.8,.5) win, (.8,.2) win -> 3.5 / 4.
    assert detector_metrics([1, 1, 0, 0], [0.5, 0.8, 0.5, 0.2])["auc"] == pytest.approx(3.5 / 4)


def test_threshold_moves_the_predictions() -> None:
    # With threshold .8 only .9 is predicted H: TP 1, FN 2, FP 0, TN 4.
    metrics = detector_metrics([1, 1, 1, 0, 0, 0, 0], [0.9, 0.6, 0.3, 0.7, 0.2, 0.1, 0.5], threshold=0.8)
    assert metrics["precision_h"] == 1.0 and metrics["recall_h"] == pytest.approx(1 / 3)
    assert metrics["accuracy"] == pytest.approx(5 / 7)


def test_one_class_only_leaves_auc_and_the_missing_class_undefined() -> None:
    # Only H items, all predicted H: recall_N (0/0), precision_N (no predicted N) and AUC have no value.
    metrics = detector_metrics([1, 1, 1], [0.9, 0.8, 0.7])
    assert metrics["auc"] is None
    assert metrics["recall_n"] is None and metrics["precision_n"] is None and metrics["f1_n"] is None
    assert metrics["g_mean"] is None
    assert metrics["recall_h"] == 1.0 and metrics["f1_h"] == 1.0
    assert metrics["brier"] == pytest.approx((0.01 + 0.04 + 0.09) / 3)


def test_class_never_predicted_has_no_precision_but_f1_zero() -> None:
    # Both classes occur, nothing predicted H: precision_H = 0/0, recall_H = 0/2 = 0, F1_H = 0 / (0+0+2) = 0.
    metrics = detector_metrics([1, 1, 0], [0.1, 0.2, 0.3])
    assert metrics["precision_h"] is None and metrics["recall_h"] == 0.0 and metrics["f1_h"] == 0.0
    assert metrics["g_mean"] == 0.0
    assert metrics["auc"] == 0.0  # every N outranks every H


def test_no_items_gives_n_zero_and_nothing_else() -> None:
    metrics = detector_metrics([], [])
    assert metrics["n"] == 0
    assert all(metrics[key] is None for key in METRIC_KEYS if key != "n")


@pytest.mark.parametrize(
    ("labels", "p_h", "message"),
    [
        ([1, 0], [0.5], "labels and p_h differ in length"),
        ([1, 2], [0.5, 0.5], r"labels\[1\] must be 1 \(H\) or 0 \(N\)"),
        ([1, "1"], [0.5, 0.5], r"labels\[1\] must be"),
        ([1, 0], [0.5, 1.5], r"p_h\[1\] must be a probability"),
        ([1, 0], [float("nan"), 0.5], r"p_h\[0\] must be a probability"),
        ([1, 0], [0.5, "x"], r"p_h\[1\] must be a probability"),
    ],
)
def test_bad_input_is_named(labels: list, p_h: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        detector_metrics(labels, p_h)


def test_bad_threshold_is_named() -> None:
    with pytest.raises(ValueError, match="threshold must be a number in"):
        detector_metrics([1], [0.5], threshold=2)


def _none_if_nan(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


@pytest.mark.parametrize("seed", range(40))
def test_agrees_with_scikit_learn_on_random_cases(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    # Skewed class shares (and sometimes one class only); probabilities rounded to force ties.
    labels = (rng.random(n) < rng.uniform(0.0, 1.0)).astype(int)
    p_h = np.round(np.clip(labels * rng.uniform(0, 0.5) + rng.random(n) * 0.7, 0, 1), 1)
    threshold = float(rng.choice([0.3, 0.5, 0.7]))
    predicted = (p_h >= threshold).astype(int)
    metrics = detector_metrics(labels.tolist(), p_h.tolist(), threshold=threshold)

    def expected(score: Callable[..., float], **kwargs: Any) -> float | None:
        return _none_if_nan(score(labels, predicted, zero_division=np.nan, **kwargs))

    assert metrics["n"] == n
    assert metrics["accuracy"] == pytest.approx(accuracy_score(labels, predicted))
    for suffix, positive in (("h", 1), ("n", 0)):
        for key, score in (("precision", precision_score), ("recall", recall_score), ("f1", f1_score)):
            want = expected(score, pos_label=positive, labels=[0, 1])
            got = metrics[f"{key}_{suffix}"]
            assert (got is None) == (want is None), (key, suffix, got, want)
            if want is not None:
                assert got == pytest.approx(want)
    recall_h = _none_if_nan(recall_score(labels, predicted, pos_label=1, zero_division=np.nan))
    recall_n = _none_if_nan(recall_score(labels, predicted, pos_label=0, zero_division=np.nan))
    if recall_h is None or recall_n is None:
        assert metrics["g_mean"] is None
    else:
        assert metrics["g_mean"] == pytest.approx(math.sqrt(recall_h * recall_n))
    if len(set(labels.tolist())) == 2:
        assert metrics["auc"] == pytest.approx(roc_auc_score(labels, p_h))
    else:
        assert metrics["auc"] is None
    assert metrics["brier"] == pytest.approx(brier_score_loss(labels, p_h, labels=[0, 1]))
