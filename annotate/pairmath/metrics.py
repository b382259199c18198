"""Detector metrics of the HaDes tables: accuracy, per-class precision / recall / F1, G-mean, AUC and Brier score.

H is class 1. A value that the data cannot define (precision of a class
never predicted, recall of a class that never occurs, AUC with one class) is
None, never a made-up number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from scipy.stats import mannwhitneyu

METRIC_KEYS = (
    "n", "accuracy", "precision_h", "recall_h", "f1_h", "precision_n", "recall_n", "f1_n", "g_mean", "auc", "brier",
)


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator else None


def _check_inputs(labels: Sequence[Any], p_h: Sequence[Any], threshold: float) -> tuple[list[int], list[float]]:
    if len(labels) != len(p_h):
        raise ValueError(f"labels and p_h differ in length: {len(labels)} labels, {len(p_h)} probabilities")
    if not (isinstance(threshold, int | float) and 0 <= threshold <= 1):
        raise ValueError(f"threshold must be a number in [0, 1], not {threshold!r}")
    checked_labels, checked_p = [], []
    for position, (label, p) in enumerate(zip(labels, p_h, strict=True)):
        # 1/0, True/False and numpy integers all compare equal to 1 or 0.
        if label not in (0, 1) or isinstance(label, str):
            raise ValueError(f"labels[{position}] must be 1 (H) or 0 (N), not {label!r}")
        try:
            probability = float(p)
        except (TypeError, ValueError):
            probability = math.nan
        if not 0 <= probability <= 1:  # also catches NaN
            raise ValueError(f"p_h[{position}] must be a probability in [0, 1], not {p!r}")
        checked_labels.append(int(label))
        checked_p.append(probability)
    return checked_labels, checked_p


def detector_metrics(labels: Sequence[Any], p_h: Sequence[Any], threshold: float = 0.5) -> dict[str, Any]:
    """Metrics of P(H) against labels (1 = H, 0 = N); an item is predicted H when P(H) >= threshold.

    F1 is 2TP / (2TP + FP + FN) for the class in question, so it is 0 (not
    undefined) when the class occurs or is predicted but never both on the
    same item, and None only when it neither occurs nor is predicted.
    G-mean = sqrt(recall_H * recall_N). AUC is the probability that a random
    H item gets a higher P(H) than a random N item (ties count half), the
    Mann-Whitney U over n_H * n_N; None unless both classes occur. Brier is
    the mean of (P(H) - label)^2 (the plain Brier score the HaDes code
    computes). Bad input raises ValueError naming the position.
    """
    labels, p_h = _check_inputs(labels, p_h, threshold)
    n = len(labels)
    predicted = [1 if p >= threshold else 0 for p in p_h]
    tp = sum(1 for y, yhat in zip(labels, predicted, strict=True) if y == 1 and yhat == 1)
    fp = sum(1 for y, yhat in zip(labels, predicted, strict=True) if y == 0 and yhat == 1)
    tn = sum(1 for y, yhat in zip(labels, predicted, strict=True) if y == 0 and yhat == 0)
    fn = n - tp - fp - tn
    recall_h = _ratio(tp, tp + fn)
    recall_n = _ratio(tn, tn + fp)
    positives = [p for y, p in zip(labels, p_h, strict=True) if y == 1]
    negatives = [p for y, p in zip(labels, p_h, strict=True) if y == 0]
    auc = None
    if positives and negatives:
        auc = float(mannwhitneyu(positives, negatives).statistic) / (len(positives) * len(negatives))
    return {
        "n": n,
        "accuracy": _ratio(tp + tn, n),
        "precision_h": _ratio(tp, tp + fp),
        "recall_h": recall_h,
        "f1_h": _ratio(2 * tp, 2 * tp + fp + fn),
        "precision_n": _ratio(tn, tn + fn),
        "recall_n": recall_n,
        "f1_n": _ratio(2 * tn, 2 * tn + fn + fp),
        "g_mean": math.sqrt(recall_h * recall_n) if recall_h is not None and recall_n is not None else None,
        "auc": auc,
        "brier": _ratio(sum((p - y) ** 2 for y, p in zip(labels, p_h, strict=True)), n),
    }
