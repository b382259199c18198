"""Detectors over many samples: the same rules as detector_keys, verdict_detectors, binarise, evaluate_detectors
and challenging_samples, on every sample's metadata classified once into arrays (DetectorOutputs), so a results
page over 100,000 samples looks at each value once. Pure: no Django imports.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from annotate.results.detectors import (
    GENERATOR_KEYS,
    HALLUCINATED,
    check_threshold,
    decision_rule,
    detector_order,
    is_score,
    is_score_text,
    metric_scores,
)

_ABSENT, _SCORE, _OTHER, _SCORE_TEXT = 0, 1, 2, 3


@dataclass
class DetectorOutputs:
    """Every metadata key's value in every sample, classified once.

    ``status[key][i]``: 0 when sample i has no such key, null or NaN (not
    counted by detector_keys), 1 for a score (is_score), 3 for a score written
    as text (is_score_text: a detector's value, yet invalid), 2 for anything else.
    ``scores[key][i]``: the score where status is 1, else NaN.
    """

    size: int
    status: dict[str, np.ndarray]
    scores: dict[str, np.ndarray]

    def detector_keys(self, rows: np.ndarray) -> list[str]:
        """detector_keys of the metadata of samples ``rows`` (in detector_order)."""
        keys = []
        for key, every_status in self.status.items():
            status = every_status[rows]
            numeric = int(((status == _SCORE) | (status == _SCORE_TEXT)).sum())
            if numeric > 0 and numeric >= int((status == _OTHER).sum()):
                keys.append(key)
        return detector_order(keys)

    def verdicts(self, keys: Iterable[str], rows: np.ndarray) -> set[str]:
        """verdict_detectors of these detectors over samples ``rows``."""
        found = set()
        for key in keys:
            valid = self.scores[key][rows][self.status[key][rows] == _SCORE]
            if len(valid) and bool(np.isin(valid, (0.0, 1.0)).all()):
                found.add(key)
        return found

    def predictions(self, key: str, rows: np.ndarray, threshold: float, verdict: bool) -> tuple[np.ndarray, np.ndarray]:
        """(valid, consistent) for samples ``rows``: binarise, as arrays."""
        valid = self.status[key][rows] == _SCORE
        scores = self.scores[key][rows]
        with np.errstate(invalid="ignore"):
            consistent = scores == 1.0 if verdict else scores >= threshold
        return valid, consistent & valid


def _classify_values(values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(status, scores) of one key's values, None meaning absent (see DetectorOutputs)."""
    kinds = set(map(type, values))
    if kinds <= {float, int, type(None)}:  # the usual case, with arrays: None and NaN become NaN
        try:
            numbers = np.array(values, dtype=np.float64)
        except OverflowError:  # an integer too large for a float: the general path says what it is
            pass
        else:
            absent = np.isnan(numbers)
            with np.errstate(invalid="ignore"):
                score = ~absent & (numbers >= 0.0) & (numbers <= 1.0)
            status = np.where(absent, _ABSENT, np.where(score, _SCORE, _OTHER)).astype(np.int8)
            return status, np.where(score, numbers, np.nan)
    status = np.zeros(len(values), dtype=np.int8)
    scores = np.full(len(values), np.nan)
    for index, value in enumerate(values):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if is_score(value):
            status[index] = _SCORE
            scores[index] = float(value)
        else:
            status[index] = _SCORE_TEXT if is_score_text(value) else _OTHER
    return status, scores


def classify_detector_outputs(
    metadatas: Sequence[Mapping[str, Any]], exclude: Iterable[str] = GENERATOR_KEYS
) -> DetectorOutputs:
    """Classify every value of every sample's metadata once (see DetectorOutputs)."""
    excluded = set(exclude)
    layouts = {tuple(metadata) for metadata in metadatas}  # the distinct key sets: few, whatever the sample count
    keys = {key for keys in layouts for key in keys if key not in excluded}
    status: dict[str, np.ndarray] = {}
    scores: dict[str, np.ndarray] = {}
    for key in detector_order(keys):
        status[key], scores[key] = _classify_values([metadata.get(key) for metadata in metadatas])
    return DetectorOutputs(size=len(metadatas), status=status, scores=scores)


def evaluate_detector_outputs(
    outputs: DetectorOutputs,
    rows: np.ndarray,
    categories: Sequence[str],
    threshold: float = 0.5,
    hallucinated: frozenset[str] = HALLUCINATED,
    keys: Sequence[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """evaluate_detectors of every detector found in the metadata of samples ``rows``, in detector_order.

    ``categories[j]`` is the worst human category of sample ``rows[j]``. With
    ``keys``, exactly those detectors are evaluated, whatever their values look
    like (the project's judges: known to be detectors even when most of their
    answers failed).
    """
    threshold = check_threshold(threshold)
    keys = outputs.detector_keys(rows) if keys is None else detector_order(key for key in keys if key in outputs.status)
    verdicts = outputs.verdicts(keys, rows)
    truth = np.array([0 if category in hallucinated else 1 for category in categories], dtype=np.int64)
    report: dict[str, dict[str, Any]] = {}
    for key in keys:
        valid, consistent = outputs.predictions(key, rows, threshold, key in verdicts)
        predicted = consistent[valid].astype(np.int64)
        status = outputs.status[key][rows]
        report[key] = (
            # DESIGN.md's "invalid": every prediction left out, missing or unusable; "missing": those of them absent.
            {"n": int(valid.sum()), "invalid": int((status != _SCORE).sum()),
             "missing": int((status == _ABSENT).sum())}
            | metric_scores(truth[valid], predicted)
            | {"rule": decision_rule(key in verdicts, threshold)}
        )
    return report


def challenging_mask(outputs: DetectorOutputs, keys: Sequence[str], rows: np.ndarray, threshold: float) -> np.ndarray:
    """challenging_samples over samples ``rows`` and detectors ``keys``, as a boolean array over ``rows``."""
    threshold = check_threshold(threshold)
    verdicts = outputs.verdicts(keys, rows)
    says_consistent = np.zeros(len(rows), dtype=bool)
    says_hallucinated = np.zeros(len(rows), dtype=bool)
    for key in keys:
        valid, consistent = outputs.predictions(key, rows, threshold, key in verdicts)
        says_consistent |= consistent
        says_hallucinated |= valid & ~consistent
    return says_consistent & says_hallucinated
