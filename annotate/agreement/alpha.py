"""Krippendorff's alpha of coded labels: pooled, per batch and batch-mean, and the fast histogram path.

Alpha itself always comes from the ``krippendorff`` package; this module
guards the degenerate cases (alpha undefined, said with a reason, never an
exception) and computes many alphas at once where one call per set would be
too slow.

Speed at 100,000 samples: the package's alpha is a function of the
coincidence matrix, which is a sum over units, and units with the same value
counts (the same *pattern*; with three annotators and four values there are
at most 20) add the same matrix. So per-batch alphas (thousands of batches),
bootstrap resamples and token-level alpha (millions of tokens) are computed
from pattern histograms with the package's own coincidence, distance and
expected-coincidence helpers, in ``_alphas_from_histograms``; the sums are
exact when no unit has more than three values (coincidences are then whole
or half numbers), so the figures are bit-identical to calling
``krippendorff.alpha`` on the units, and equal to float rounding otherwise.
Pooled and pairwise alphas still come from ``krippendorff.alpha`` itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import krippendorff
import numpy as np
from krippendorff import krippendorff as _kd  # the package's own coincidence and distance helpers

from annotate.agreement.labels import AlphaResult, BatchCodes, BatchLabels, CodedLabels, _value_counts, code_labels
from annotate.agreement.schemes import Scheme, check_aggregate, check_level, parse_scheme


def _alpha_from_counts(counts: np.ndarray, scheme: Scheme, level: str) -> tuple[float | None, str | None, int]:
    """(alpha, reason when undefined, units that entered) for a units x groups count matrix.

    The checks come first so that the package is only asked well-posed
    questions; its own ValueError is still caught, never raised.
    """
    pairable = counts.sum(axis=1) >= 2
    units = int(pairable.sum())
    if units == 0:
        return None, "no sample has two values", 0
    counts = counts[pairable]
    present = np.flatnonzero(counts.sum(axis=0))
    if len(present) < 2:
        only = scheme.group_name(int(present[0]))
        return None, f"only one value occurs: {only} (no disagreement is possible to measure)", units
    try:
        value = float(
            krippendorff.alpha(
                value_counts=counts,
                value_domain=np.arange(len(scheme.groups)),
                level_of_measurement=level,
            )
        )
    except (ValueError, ZeroDivisionError, FloatingPointError) as error:
        return None, f"krippendorff could not compute alpha: {error}", units
    if not math.isfinite(value):
        return None, "expected disagreement is zero", units
    return value, None, units


def _patterns(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows of a units x values count matrix, index of each unit's row among them)."""
    if len(counts) == 0:
        return np.zeros((0, counts.shape[1]), dtype=np.int64), np.zeros(0, dtype=np.int64)
    base = int(counts.max()) + 1
    if base ** counts.shape[1] < 2**62:  # one integer per row: much faster than unique rows
        keys = counts.astype(np.int64) @ (base ** np.arange(counts.shape[1], dtype=np.int64))
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(counts, axis=0, return_index=True, return_inverse=True)
    return counts[first], inverse.reshape(-1)


def _alphas_of_coincidences(coincidences: np.ndarray, groups: int, level: str) -> np.ndarray:
    """Alpha for each (groups x groups) coincidence matrix of a stack, as krippendorff.alpha finishes its work.

    ``1 - (o * d).sum() / (e * d).sum()`` with the package's expected
    coincidences e and distances d; for thousands of matrices at once those
    two are computed here with the package's formulas over the whole stack,
    in the same order of operations (tests check the result against
    krippendorff.alpha bit for bit).
    """
    n_v = coincidences.sum(axis=1)  # the package: o.sum(axis=0) of each matrix
    # _random_coincidences: (outer(n_v, n_v) - diagflat(n_v)) / (n_v.sum() - 1)
    expected = (n_v[:, :, np.newaxis] * n_v[:, np.newaxis, :] - n_v[:, :, np.newaxis] * np.eye(groups)) / (
        n_v.sum(axis=1) - 1
    )[:, np.newaxis, np.newaxis]
    if level == "ordinal":  # the only distance that depends on the value frequencies
        # _ordinal_metric: (sum of n_v[lo..hi] - (n_v[lo] + n_v[hi]) / 2) ** 2, summed left to right
        distances = np.empty_like(coincidences)
        for first in range(groups):
            for second in range(groups):
                lo, hi = min(first, second), max(first, second)
                between = n_v[:, lo].copy()
                for value in range(lo + 1, hi + 1):
                    between = between + n_v[:, value]
                distances[:, first, second] = (between - (n_v[:, lo] + n_v[:, hi]) / 2) ** 2
    else:
        distances = _kd._distances(np.arange(groups), _kd._distance_metric(level), np.zeros(groups))[np.newaxis]
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1 - (coincidences * distances).sum(axis=(1, 2)) / (expected * distances).sum(axis=(1, 2))


def _alphas_from_histograms(
    histograms: np.ndarray, patterns: np.ndarray, scheme: Scheme, level: str
) -> list[tuple[float | None, str | None, int]]:
    """``_alpha_from_counts`` of many sets of units at once, each given as a histogram over ``patterns``.

    ``patterns`` are value-count rows of pairable units (two or more values);
    ``histograms[s, p]`` is how many units of set s have pattern p. A unit's
    coincidences depend only on its pattern, so a set's coincidence matrix is
    its histogram times the patterns' matrices (see the module docstring).
    """
    groups = len(scheme.groups)
    histograms = np.asarray(histograms, dtype=np.float64)
    if len(patterns):
        per_pattern = np.stack([_kd._coincidences(row[np.newaxis, :]).ravel() for row in patterns])
    else:
        per_pattern = np.zeros((0, groups * groups))
    coincidences = (histograms @ per_pattern).reshape(-1, groups, groups)
    units = histograms.sum(axis=1).astype(np.int64)
    present = (histograms @ patterns.astype(np.float64)) > 0
    defined = (units > 0) & (present.sum(axis=1) >= 2)
    values = np.full(len(histograms), np.nan)
    if defined.any():
        values[defined] = _alphas_of_coincidences(coincidences[defined], groups, level)
    results: list[tuple[float | None, str | None, int]] = []
    for row in range(len(histograms)):
        count = int(units[row])
        if count == 0:
            results.append((None, "no sample has two values", 0))
        elif not defined[row]:
            only = scheme.group_name(int(np.flatnonzero(present[row])[0]))
            results.append((None, f"only one value occurs: {only} (no disagreement is possible to measure)", count))
        elif not math.isfinite(values[row]):
            results.append((None, "expected disagreement is zero", count))
        else:
            results.append((float(values[row]), None, count))
    return results


def _alphas_by_range(
    counts: np.ndarray, bounds: Sequence[tuple[int, int]], scheme: Scheme, level: str
) -> list[tuple[float | None, str | None, int]]:
    """``_alpha_from_counts(counts[start:stop])`` for every (start, stop) of contiguous, disjoint unit ranges."""
    pairable = counts.sum(axis=1) >= 2
    patterns, pattern_of = _patterns(counts[pairable])
    sizes = [stop - start for start, stop in bounds]
    owner = np.full(len(counts), -1, dtype=np.int64)
    for index, (start, stop) in enumerate(bounds):
        owner[start:stop] = index
    owner = owner[pairable]
    inside = owner >= 0
    flat = owner[inside] * len(patterns) + pattern_of[inside]
    histograms = np.bincount(flat, minlength=len(sizes) * len(patterns)).reshape(len(sizes), len(patterns))
    return _alphas_from_histograms(histograms, patterns, scheme, level)


def _undefined_reason(reason: str, rosters: Sequence[Sequence[str]], scheme: Scheme) -> str:
    """Say why no sample has two values, when that is the reason."""
    if reason != "no sample has two values":
        return reason
    if not any(rosters):
        return "no sample has two values: no annotator submitted these batches"
    if all(len(roster) < 2 for roster in rosters):
        return "no sample has two values: each batch has only one annotator"
    if scheme.dropped:
        return f"no sample has two values under scheme {scheme.text} ({', '.join(scheme.dropped)} are missing values)"
    return reason


def _per_batch_entries(
    names: Sequence[str],
    rosters: Sequence[Sequence[str]],
    results: Sequence[tuple[float | None, str | None, int]],
    scheme: Scheme,
) -> list[dict[str, Any]]:
    entries = []
    for name, roster, (value, reason, units) in zip(names, rosters, results, strict=True):
        if reason is not None:
            reason = _undefined_reason(reason, [roster], scheme)
        entries.append({"batch": name, "alpha": value, "reason": reason, "units": units, "annotators": len(roster)})
    return entries


def _per_batch(coded: CodedLabels, counts: np.ndarray, scheme: Scheme, level: str) -> list[dict[str, Any]]:
    results = _alphas_by_range(counts, coded.bounds, scheme, level)
    return _per_batch_entries(coded.batch_names, coded.rosters, results, scheme)


def compute_alpha(
    batches: Iterable[BatchLabels | BatchCodes] | CodedLabels,
    scheme: str | Scheme,
    level: str = "nominal",
    aggregate: str = "pooled",
) -> AlphaResult:
    """Krippendorff's alpha of worst-pooled sample labels under a scheme.

    ``pooled``: one alpha over every sample of every batch (rows: every
    annotator seen). ``batch-mean``: unweighted mean of the per-batch alphas
    that are defined; ``units`` then counts the units of those batches only, and ``batches_defined`` /
    ``batches_undefined`` say how many batches the mean averages and leaves out (batch_mean_note words them).
    ``annotators`` is the number of distinct people in the batches' rosters.
    ``per_batch`` is filled for both aggregates.
    """
    scheme = parse_scheme(scheme)
    check_level(level)
    check_aggregate(aggregate)
    coded = code_labels(batches)
    counts = _value_counts(coded, scheme)
    per_batch = _per_batch(coded, counts, scheme, level)
    annotators = len({person for roster in coded.rosters for person in roster})
    if aggregate == "pooled":
        value, reason, units = _alpha_from_counts(counts, scheme, level)
        if reason is not None:
            reason = _undefined_reason(reason, coded.rosters, scheme)
        return AlphaResult(value, reason, units, annotators, per_batch)
    defined = [entry for entry in per_batch if entry["alpha"] is not None]
    counts = {"batches_defined": len(defined), "batches_undefined": len(per_batch) - len(defined)}
    if not defined:
        if not per_batch:
            reason = "no batch to average"
        else:
            reasons = sorted({entry["reason"] for entry in per_batch})
            reason = "no batch has a defined alpha: " + "; ".join(reasons)
        return AlphaResult(None, reason, 0, annotators, per_batch, **counts)
    mean = float(np.mean([entry["alpha"] for entry in defined]))
    return AlphaResult(mean, None, sum(entry["units"] for entry in defined), annotators, per_batch, **counts)
