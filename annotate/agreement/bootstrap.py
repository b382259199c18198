"""Two more views of sample-level alpha: bootstrap intervals of the pooled alpha, and alpha per annotator pair.

Both start from the same coded labels as compute_alpha. The bootstrap
resamples units and scores each resample on the histogram path of
annotate.agreement.alpha; pairwise alpha asks krippendorff once per pair.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from annotate.agreement.alpha import _alpha_from_counts, _alphas_from_histograms, _patterns
from annotate.agreement.labels import BatchCodes, BatchLabels, CodedLabels, _value_counts, code_labels
from annotate.agreement.schemes import Scheme, check_level, parse_scheme

# Past this many unit draws in total the bootstrap takes fewer resamples (see bootstrap_resamples).
BOOTSTRAP_MAX_DRAWS = 10_000_000
BOOTSTRAP_MIN_RESAMPLES = 100


def bootstrap_resamples(units: int, requested: int, max_draws: int = BOOTSTRAP_MAX_DRAWS) -> int:
    """How many resamples bootstrap_interval takes for this many units.

    Past ``max_draws`` units drawn in total we take fewer, never fewer than
    BOOTSTRAP_MIN_RESAMPLES. (The cap dates from when each resample was a
    krippendorff call over all units; a resample now costs one draw and a
    bincount, about 1 ms at 100,000 units, but the cap stays so that the
    seeded intervals stay what they were.) With that many units the interval
    is narrow and its percentiles are stable long before 1,000 resamples.
    """
    if units <= 0:
        return 0
    affordable = max(BOOTSTRAP_MIN_RESAMPLES, max_draws // units)
    return max(1, min(requested, affordable))


def bootstrap_interval(
    batches: Iterable[BatchLabels | BatchCodes] | CodedLabels,
    scheme: str | Scheme,
    level: str = "nominal",
    *,
    samples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    max_draws: int = BOOTSTRAP_MAX_DRAWS,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the pooled alpha, or None when alpha is undefined.

    Resamples, with replacement, the units that entered the alpha (samples
    with two or more values; the others never change alpha), with a seeded
    numpy Generator so the same call gives the same interval. Resamples on
    which alpha is undefined (e.g. only one value drawn) are left out of the
    percentiles. The number of resamples may be lowered for huge data, see
    ``bootstrap_resamples``.

    Each resample draws ``rng.integers(0, units, size=units)`` unit indices, as
    resampling the count rows would; its alpha is then computed from how many
    drawn units have each value pattern (the same alpha, see the docstring of
    annotate.agreement.alpha), not by a krippendorff call over 100,000 rows.
    """
    return bootstrap_intervals(
        batches, scheme, [level], samples=samples, seed=seed, confidence=confidence, max_draws=max_draws
    )[level]


def bootstrap_intervals(
    batches: Iterable[BatchLabels | BatchCodes] | CodedLabels,
    scheme: str | Scheme,
    levels: Sequence[str],
    *,
    samples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    max_draws: int = BOOTSTRAP_MAX_DRAWS,
) -> dict[str, tuple[float, float] | None]:
    """bootstrap_interval for several levels: each level's resamples are the same draws, so they are drawn once."""
    scheme = parse_scheme(scheme)
    for level in levels:
        check_level(level)
    if samples < 1:
        raise ValueError("samples must be at least 1")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1, e.g. 0.95")
    counts = _value_counts(code_labels(batches), scheme)
    counts = counts[counts.sum(axis=1) >= 2]
    patterns, pattern_of = _patterns(counts)
    units = len(counts)
    everything = np.bincount(pattern_of, minlength=len(patterns))[np.newaxis]
    histograms: np.ndarray | None = None
    intervals: dict[str, tuple[float, float] | None] = {}
    for level in levels:
        point, _, _ = _alphas_from_histograms(everything, patterns, scheme, level)[0]
        if point is None:
            intervals[level] = None
            continue
        if histograms is None:
            rng = np.random.default_rng(seed)
            histograms = np.empty((bootstrap_resamples(units, samples, max_draws), len(patterns)))
            for row in range(len(histograms)):
                histograms[row] = np.bincount(pattern_of[rng.integers(0, units, size=units)], minlength=len(patterns))
        estimates = [
            value for value, _, _ in _alphas_from_histograms(histograms, patterns, scheme, level) if value is not None
        ]
        if not estimates:
            intervals[level] = None
            continue
        tail = (1 - confidence) / 2 * 100
        low, high = np.percentile(estimates, [tail, 100 - tail])
        intervals[level] = (float(low), float(high))
    return intervals


def pairwise_alpha(
    batches: Iterable[BatchLabels | BatchCodes] | CodedLabels, scheme: str | Scheme, level: str = "nominal"
) -> list[dict[str, Any]]:
    """Alpha of every pair of annotators over the samples both gave a value (not dropped by the scheme).

    One entry per pair that shares at least one batch:
    ``{"annotators": [a, b], "alpha", "reason", "units"}``, a and b in roster order.
    """
    scheme = parse_scheme(scheme)
    check_level(level)
    coded = code_labels(batches)
    values = scheme.lookup()[coded.cell_category]
    kept = values >= 0
    # Per annotator: their units (sorted, unique since each cell is one annotator x unit) and values.
    order = np.lexsort((coded.cell_unit, coded.cell_annotator))
    annotator_sorted = coded.cell_annotator[order]
    starts = np.searchsorted(annotator_sorted, np.arange(len(coded.annotators) + 1))
    unit_sorted, value_sorted, kept_sorted = coded.cell_unit[order], values[order], kept[order]

    def cells_of(index: int) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = starts[index], starts[index + 1]
        mask = kept_sorted[lo:hi]
        return unit_sorted[lo:hi][mask], value_sorted[lo:hi][mask]

    pairs: dict[tuple[int, int], None] = {}
    index_of = {name: index for index, name in enumerate(coded.annotators)}
    for roster in coded.rosters:
        for first, second in itertools.combinations(roster, 2):
            pairs[(index_of[first], index_of[second])] = None
    groups = len(scheme.groups)
    entries = []
    for first, second in pairs:
        units_a, values_a = cells_of(first)
        units_b, values_b = cells_of(second)
        _, at_a, at_b = np.intersect1d(units_a, units_b, assume_unique=True, return_indices=True)
        counts = np.zeros((len(at_a), groups), dtype=np.int64)
        rows = np.arange(len(at_a))
        np.add.at(counts, (rows, values_a[at_a]), 1)
        np.add.at(counts, (rows, values_b[at_b]), 1)
        value, reason, units = _alpha_from_counts(counts, scheme, level)
        if reason == "no sample has two values":
            reason = "no sample has values from both annotators"
        entries.append(
            {
                "annotators": [coded.annotators[first], coded.annotators[second]],
                "alpha": value,
                "reason": reason,
                "units": units,
            }
        )
    return entries
