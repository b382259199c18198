"""Inter-annotator agreement on FaithBench sample labels and spans. Pure: no Django imports.

Alpha itself always comes from the ``krippendorff`` package. This module only
turns worst-pooled labels into what that package takes, guards the degenerate
cases (alpha undefined, said with a reason, never an exception), and adds the
views FaithBench reports: label schemes, pooled vs batch-mean, per annotator
pair, bootstrap intervals, span F1 and token-level alpha.

Data flow: ``BatchLabels`` or ``BatchCodes`` (one per batch) -> ``CodedLabels``
(every annotator x sample cell of every batch as integer arrays, built once by
``code_labels`` and independent of the scheme) -> per scheme, a value-count matrix (units x groups)
-> ``krippendorff.alpha(value_counts=...)``.

Why value counts and not the annotators x samples reliability matrix: the
package reduces the matrix to exactly these counts as its first step, and
building them directly costs memory in the number of labels instead of
(all annotators ever seen) x (all samples). ``reliability_matrix`` still gives
the matrix, for export and for tests that check both paths agree.

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

import functools
import itertools
import math
import re
import sys
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import krippendorff
import numpy as np
from krippendorff import krippendorff as _kd  # the package's own coincidence and distance helpers

from annotate.taxonomy import SEVERITY

CATEGORIES: tuple[str, ...] = ("C", "B", "Q", "U")  # severity order; index = code
_CODE: dict[str, int] = {category: SEVERITY[category] for category in CATEGORIES}
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval")
AGGREGATES: tuple[str, ...] = ("pooled", "batch-mean")
SPAN_MODES: tuple[str, ...] = ("exact", "overlap")

# Past this many unit draws in total the bootstrap takes fewer resamples (see bootstrap_resamples).
BOOTSTRAP_MAX_DRAWS = 10_000_000
BOOTSTRAP_MIN_RESAMPLES = 100

SampleKey = Hashable


# --------------------------------------------------------------------------- schemes


class SchemeError(ValueError):
    """A label scheme string that cannot be read."""


class Scheme(Mapping[str, int | None]):
    """Category letter -> value (its group's position) or None when the scheme drops it.

    ``Scheme(("C", "B"), ("Q",), ("U",))`` is ``C+B|Q|U``: C and B are 0, Q 1, U 2.
    """

    def __init__(self, *groups: Sequence[str]) -> None:
        self.groups: tuple[tuple[str, ...], ...] = tuple(tuple(group) for group in groups)
        self._values: dict[str, int | None] = dict.fromkeys(CATEGORIES)
        for position, group in enumerate(self.groups):
            for category in group:
                self._values[category] = position

    def __getitem__(self, category: str) -> int | None:
        return self._values[category]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Scheme({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scheme) and other.groups == self.groups

    def __hash__(self) -> int:
        return hash(self.groups)

    @property
    def text(self) -> str:
        """Canonical spelling, e.g. ``C+B|Q|U``."""
        return "|".join(self.group_name(position) for position in range(len(self.groups)))

    def group_name(self, position: int) -> str:
        return "+".join(self.groups[position])

    @property
    def dropped(self) -> tuple[str, ...]:
        return tuple(category for category in CATEGORIES if self._values[category] is None)

    def lookup(self) -> np.ndarray:
        """Category code (C=0 .. U=3) -> value, -1 for a dropped category."""
        return np.array([-1 if self._values[c] is None else self._values[c] for c in CATEGORIES], dtype=np.int64)


def parse_scheme(text: str | Scheme) -> Scheme:
    """Read ``C|U``, ``C+B|Q+U``, ... : groups in order split by ``|``, categories merged by ``+``.

    Whitespace is ignored and lower case accepted. Categories left out are
    missing values. Raises SchemeError naming what is wrong.
    """
    if isinstance(text, Scheme):
        return text
    if not isinstance(text, str):
        raise SchemeError(f"a scheme must be a string like 'C|B|Q|U', not {type(text).__name__}")
    compact = re.sub(r"\s+", "", text).upper()
    if not compact:
        raise SchemeError("the scheme is empty; write groups of C, B, Q, U separated by '|', e.g. 'C+B|Q+U'")
    groups: list[list[str]] = []
    seen: set[str] = set()
    for position, raw_group in enumerate(compact.split("|"), start=1):
        if not raw_group:
            raise SchemeError(f"scheme {text!r}: group {position} is empty")
        group: list[str] = []
        for category in raw_group.split("+"):
            if not category:
                raise SchemeError(f"scheme {text!r}: group {position} has an empty category around '+'")
            if category not in _CODE:
                hint = "; join categories with '+'" if len(category) > 1 and set(category) <= set(_CODE) else ""
                raise SchemeError(
                    f"scheme {text!r}: unknown category {category!r}; the categories are C, B, Q, U{hint}"
                )
            if category in seen:
                raise SchemeError(f"scheme {text!r}: category {category!r} is used twice")
            seen.add(category)
            group.append(category)
        groups.append(group)
    if len(groups) < 2:
        raise SchemeError(f"scheme {text!r}: needs at least two groups separated by '|' to measure agreement")
    return Scheme(*groups)


def check_level(level: str) -> str:
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; use one of {', '.join(LEVELS)}")
    return level


def check_aggregate(aggregate: str) -> str:
    if aggregate not in AGGREGATES:
        raise ValueError(f"unknown aggregate {aggregate!r}; use one of {', '.join(AGGREGATES)}")
    return aggregate


# --------------------------------------------------------------------------- inputs and results


@dataclass
class BatchLabels:
    """Worst-pooled sample labels of one batch.

    ``annotators``: who annotated the batch (already without admin-excluded ones).
    ``labels[(annotator, sample)]``: category letter; a missing pair means C,
    because an annotator of the batch who left no span judged the sample consistent.
    Labels of people not in ``annotators`` or of samples not in ``samples`` are ignored.
    """

    name: str
    annotators: list[str]
    samples: list[SampleKey]
    labels: dict[tuple[str, SampleKey], str] = field(default_factory=dict)


@dataclass
class BatchCodes:
    """Worst-pooled sample labels of one batch as a matrix (what stats reads from the database).

    ``codes[i, j]`` is the category code (C=0, B=1, Q=2, U=3) that ``annotators[i]``
    gave ``samples[j]``, 0 where they left no labelled span. Annotators and
    samples are unique. Means the same as the BatchLabels with those labels.
    """

    name: str
    annotators: list[str]
    samples: list[SampleKey]
    codes: np.ndarray


@dataclass
class AlphaResult:
    alpha: float | None
    reason: str | None
    units: int
    annotators: int
    per_batch: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "reason": self.reason,
            "units": self.units,
            "annotators": self.annotators,
            "per_batch": [dict(entry) for entry in self.per_batch],
        }


@dataclass
class CodedLabels:
    """Every (annotator of the batch, sample of the batch) cell as parallel integer arrays.

    Units are numbered batch after batch, so one batch is the contiguous unit
    range ``bounds[b]``; sample keys only need to be unique within a batch
    (FaithBench numbers samples 0..49 in every file). Build it once with
    ``code_labels`` and pass it to several calls to skip the coding step.
    """

    batch_names: list[str]
    rosters: list[list[str]]
    bounds: list[tuple[int, int]]
    batch_samples: list[list[SampleKey]]
    annotators: list[str]
    cell_annotator: np.ndarray
    cell_unit: np.ndarray
    cell_category: np.ndarray

    @property
    def unit_count(self) -> int:
        return self.bounds[-1][1] if self.bounds else 0

    @property
    def units(self) -> list[tuple[str, SampleKey]]:
        return [(name, key) for name, keys in zip(self.batch_names, self.batch_samples, strict=True) for key in keys]


def _label_block(batch: BatchLabels, roster: list[str], samples: list[SampleKey]) -> np.ndarray:
    row_of = {annotator: row for row, annotator in enumerate(roster)}
    column_of = {key: column for column, key in enumerate(samples)}
    # Start from C everywhere, then write the labels that exist: the loop runs
    # over labels given, not over every annotator x sample pair.
    block = np.zeros((len(roster), len(samples)), dtype=np.int8)
    for (annotator, key), category in batch.labels.items():
        row = row_of.get(annotator)
        column = column_of.get(key)
        if row is None or column is None:
            continue
        code = _CODE.get(category)
        if code is None:
            raise ValueError(
                f"batch {batch.name!r}: label {category!r} of {annotator!r} on sample {key!r} "
                f"is not one of {', '.join(CATEGORIES)}"
            )
        block[row, column] = code
    return block


def _code_block(batch: BatchCodes) -> np.ndarray:
    block = np.asarray(batch.codes, dtype=np.int8)
    if block.shape != (len(batch.annotators), len(batch.samples)):
        raise ValueError(
            f"batch {batch.name!r}: codes have shape {block.shape}, "
            f"not annotators x samples ({len(batch.annotators)}, {len(batch.samples)})"
        )
    if len(set(batch.annotators)) != len(batch.annotators) or len(set(batch.samples)) != len(batch.samples):
        raise ValueError(f"batch {batch.name!r}: annotators and samples must be unique")
    if block.size and (block.min() < 0 or block.max() >= len(CATEGORIES)):
        raise ValueError(f"batch {batch.name!r}: codes must be 0..{len(CATEGORIES) - 1} (C, B, Q, U)")
    return block


def code_labels(batches: Iterable[BatchLabels | BatchCodes] | CodedLabels) -> CodedLabels:
    """The cells of every batch as integer arrays, independent of the scheme; a CodedLabels is returned as is."""
    if isinstance(batches, CodedLabels):
        return batches
    annotator_index: dict[str, int] = {}
    names: list[str] = []
    rosters: list[list[str]] = []
    bounds: list[tuple[int, int]] = []
    batch_samples: list[list[SampleKey]] = []
    annotator_parts: list[np.ndarray] = []
    unit_parts: list[np.ndarray] = []
    category_parts: list[np.ndarray] = []
    first = 0
    for batch in batches:
        if isinstance(batch, BatchCodes):
            roster, samples, block = list(batch.annotators), list(batch.samples), _code_block(batch)
        else:
            roster = list(dict.fromkeys(batch.annotators))
            samples = list(dict.fromkeys(batch.samples))
            block = _label_block(batch, roster, samples) if roster and samples else None
        names.append(batch.name)
        rosters.append(roster)
        bounds.append((first, first + len(samples)))
        batch_samples.append(samples)
        indices = np.array([annotator_index.setdefault(a, len(annotator_index)) for a in roster], dtype=np.int64)
        if roster and samples and block is not None:
            annotator_parts.append(np.repeat(indices, len(samples)))
            unit_parts.append(np.tile(np.arange(first, first + len(samples), dtype=np.int64), len(roster)))
            category_parts.append(block.ravel())
        first += len(samples)

    def joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    return CodedLabels(
        batch_names=names,
        rosters=rosters,
        bounds=bounds,
        batch_samples=batch_samples,
        annotators=list(annotator_index),
        cell_annotator=joined(annotator_parts, np.int64),
        cell_unit=joined(unit_parts, np.int64),
        cell_category=joined(category_parts, np.int8),
    )


def _value_counts(coded: CodedLabels, scheme: Scheme) -> np.ndarray:
    """units x groups: how many annotators gave each unit each value (dropped categories count nowhere)."""
    groups = len(scheme.groups)
    values = scheme.lookup()[coded.cell_category]
    kept = values >= 0
    flat = coded.cell_unit[kept] * groups + values[kept]
    return np.bincount(flat, minlength=coded.unit_count * groups).reshape(coded.unit_count, groups)


def reliability_matrix(
    batches: Iterable[BatchLabels | BatchCodes] | CodedLabels, scheme: str | Scheme
) -> tuple[list[str], list[tuple[str, SampleKey]], np.ndarray]:
    """(annotators, units as (batch, sample), annotators x units values with NaN for missing)."""
    scheme = parse_scheme(scheme)
    coded = code_labels(batches)
    matrix = np.full((len(coded.annotators), coded.unit_count), np.nan)
    values = scheme.lookup()[coded.cell_category].astype(float)
    values[values < 0] = np.nan
    matrix[coded.cell_annotator, coded.cell_unit] = values
    return coded.annotators, coded.units, matrix


# --------------------------------------------------------------------------- alpha


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
    that are defined; ``units`` then counts the units of those batches only.
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
    if not defined:
        if not per_batch:
            reason = "no batch to average"
        else:
            reasons = sorted({entry["reason"] for entry in per_batch})
            reason = "no batch has a defined alpha: " + "; ".join(reasons)
        return AlphaResult(None, reason, 0, annotators, per_batch)
    mean = float(np.mean([entry["alpha"] for entry in defined]))
    return AlphaResult(mean, None, sum(entry["units"] for entry in defined), annotators, per_batch)


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
    drawn units have each value pattern (the same alpha, see the module
    docstring), not by a krippendorff call over 100,000 rows.
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


# --------------------------------------------------------------------------- spans

Span = tuple[int, int, str | None]  # (start, end, category); code points, end-exclusive


@dataclass
class BatchSpans:
    """Spans of one batch for span-level agreement.

    ``spans[(annotator, sample)]``: that annotator's spans on the sample, each
    ``(start, end, category)``; a category of None (empty label list) is ignored.
    A missing pair means the annotator left no span (the sample is consistent).
    Batch names are unique: a sample is known by (batch name, sample key).
    """

    name: str
    annotators: list[str]
    summaries: dict[SampleKey, str]
    spans: dict[tuple[str, SampleKey], list[Span]] = field(default_factory=dict)


def _f1_entry(matched_a: int, total_a: int, matched_b: int, total_b: int) -> dict[str, Any]:
    precision = matched_a / total_a if total_a else None
    recall = matched_b / total_b if total_b else None
    if total_a == 0 and total_b == 0:
        f1 = None  # nothing marked by either: no agreement to measure
    elif not precision or not recall:
        f1 = 0.0  # one side marked nothing, or nothing matched
    else:
        f1 = 2 * precision * recall / (precision + recall)
    return {"precision": precision, "recall": recall, "f1": f1, "spans_a": total_a, "spans_b": total_b}


def _matched(spans: Sequence[Span], others: Sequence[Span], mode: str) -> int:
    if mode == "exact":
        other_bounds = {(start, end) for start, end, _ in others}
        return sum((start, end) in other_bounds for start, end, _ in spans)
    return sum(any(start < o_end and o_start < end for o_start, o_end, _ in others) for start, end, _ in spans)


def _category_order(category: str) -> tuple[int, str]:
    return SEVERITY.get(category, 99), category


def _check_modes(modes: Iterable[str]) -> tuple[str, ...]:
    modes = tuple(modes)
    for mode in modes:
        if mode not in SPAN_MODES:
            raise ValueError(f"unknown span mode {mode!r}; use one of {', '.join(SPAN_MODES)}")
    return modes


def span_f1(
    spans_a: Mapping[SampleKey, Sequence[Span]], spans_b: Mapping[SampleKey, Sequence[Span]], mode: str = "exact"
) -> dict[str, Any]:
    """Span agreement of annotators A and B, overall and per label category.

    Spans are compared only within the same sample; spans whose category is
    None are ignored. A span of A is *matched* when B has, on the same sample,
    a span with the same start and end (``exact``) or sharing at least one
    character, ``a.start < b.end and b.start < a.end`` (``overlap``).
    Per category, both sides are first restricted to spans of that category,
    so a match also needs the same category; overall ignores categories.

    precision = matched spans of A / spans of A; recall = matched spans of B
    (matched against A) / spans of B; F1 = 2PR / (P + R). Swapping A and B
    swaps P and R and leaves F1 unchanged. F1 is None when neither side has a
    span, 0 when only one side has spans or nothing matches; P (or R) is None
    when A (or B) has no span.

    Returns ``{"overall": entry, "per_label": {category: entry}}`` with
    entry ``{"precision", "recall", "f1", "spans_a", "spans_b"}`` (fractions).
    pairwise_span_agreement computes the same for every pair of a project at once.
    """
    _check_modes([mode])
    clean_a = {key: [s for s in spans if s[2] is not None] for key, spans in spans_a.items()}
    clean_b = {key: [s for s in spans if s[2] is not None] for key, spans in spans_b.items()}
    samples = list(dict.fromkeys([*clean_a, *clean_b]))
    categories = sorted(
        {s[2] for spans in [*clean_a.values(), *clean_b.values()] for s in spans},
        key=_category_order,  # type: ignore[arg-type]
    )

    def tally(category: str | None) -> dict[str, Any]:
        matched_a = total_a = matched_b = total_b = 0
        for key in samples:
            a = [s for s in clean_a.get(key, []) if category is None or s[2] == category]
            b = [s for s in clean_b.get(key, []) if category is None or s[2] == category]
            matched_a += _matched(a, b, mode)
            matched_b += _matched(b, a, mode)
            total_a += len(a)
            total_b += len(b)
        return _f1_entry(matched_a, total_a, matched_b, total_b)

    return {"overall": tally(None), "per_label": {category: tally(category) for category in categories}}


@dataclass
class _SpanTable:
    """Every counted span of a set of batches as parallel arrays, sorted by (annotator, unit)."""

    annotator: np.ndarray
    batch: np.ndarray
    unit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    category: np.ndarray  # index into categories
    categories: list[str]
    annotator_starts: np.ndarray  # rows of annotator i: annotator_starts[i]:annotator_starts[i + 1]

    def rows(self, annotator: int, batches: np.ndarray) -> np.ndarray:
        lo, hi = self.annotator_starts[annotator], self.annotator_starts[annotator + 1]
        return lo + np.flatnonzero(np.isin(self.batch[lo:hi], batches))


def _span_table(batches: Sequence[BatchSpans], people: dict[str, int]) -> _SpanTable:
    units: dict[tuple[str, SampleKey], int] = {}
    categories: dict[str, int] = {}
    columns: list[tuple[int, int, int, int, int, int]] = []
    for index, batch in enumerate(batches):
        roster = set(batch.annotators)
        unit_of = {key: units.setdefault((batch.name, key), len(units)) for key in batch.summaries}
        for (annotator, key), spans in batch.spans.items():
            unit = unit_of.get(key)
            if unit is None or annotator not in roster:
                continue
            person = people[annotator]
            for start, end, category in spans:
                if category is not None:
                    code = categories.setdefault(category, len(categories))
                    columns.append((person, index, unit, start, end, code))
    table = np.array(columns, dtype=np.int64).reshape(-1, 6)
    table = table[np.lexsort((table[:, 2], table[:, 0]))]
    annotator_starts = np.searchsorted(table[:, 0], np.arange(len(people) + 1))
    return _SpanTable(*table.T, categories=list(categories), annotator_starts=annotator_starts)


def _pair_scores(table: _SpanTable, rows_a: np.ndarray, rows_b: np.ndarray, modes: tuple[str, ...]) -> dict[str, Any]:
    """span_f1 of one pair in each mode, from the rows of A's and B's spans (each sorted by unit)."""
    unit_a, unit_b = table.unit[rows_a], table.unit[rows_b]
    # Every (span of A, span of B) on the same unit: for each A span, the run of B spans with its unit.
    lo = np.searchsorted(unit_b, unit_a, side="left")
    hi = np.searchsorted(unit_b, unit_a, side="right")
    runs = hi - lo
    at_a = np.repeat(np.arange(len(rows_a)), runs)
    at_b = lo[at_a] + np.arange(len(at_a)) - np.repeat(np.cumsum(runs) - runs, runs)
    start_a, end_a = table.start[rows_a][at_a], table.end[rows_a][at_a]
    start_b, end_b = table.start[rows_b][at_b], table.end[rows_b][at_b]
    category_a, category_b = table.category[rows_a], table.category[rows_b]
    same_category = category_a[at_a] == category_b[at_b]
    present = sorted(
        {table.categories[code] for code in np.unique(np.concatenate([category_a, category_b]))}, key=_category_order
    )
    scores: dict[str, Any] = {}
    for mode in modes:
        if mode == "exact":
            match = (start_a == start_b) & (end_a == end_b)
        else:
            match = (start_a < end_b) & (start_b < end_a)
        per_label = {}
        for label in [None, *present]:
            hit = match & same_category if label is not None else match
            matched_a = np.zeros(len(rows_a), dtype=bool)
            matched_b = np.zeros(len(rows_b), dtype=bool)
            matched_a[at_a[hit]] = True
            matched_b[at_b[hit]] = True
            if label is None:
                scores[mode] = {"overall": _f1_entry(int(matched_a.sum()), len(rows_a), int(matched_b.sum()), len(rows_b))}
                continue
            code = table.categories.index(label)
            mine, theirs = category_a == code, category_b == code
            per_label[label] = _f1_entry(
                int((matched_a & mine).sum()), int(mine.sum()), int((matched_b & theirs).sum()), int(theirs.sum())
            )
        scores[mode]["per_label"] = per_label
    return scores


def pairwise_span_agreement(batches: Iterable[BatchSpans], modes: Iterable[str] = SPAN_MODES) -> list[dict[str, Any]]:
    """span_f1 of every annotator pair, in each mode, over the samples of the batches both annotated.

    ``[{"annotators": [a, b], "exact": {"overall", "per_label"}, "overlap": {...}}]``,
    pairs in the order they first share a batch, a and b in roster order.
    Every span is compared once per pair, with arrays, not pair by pair in Python.
    """
    modes = _check_modes(modes)
    batches = list(batches)
    people: dict[str, int] = {}
    pair_batches: dict[tuple[str, str], list[int]] = {}
    for index, batch in enumerate(batches):
        roster = list(dict.fromkeys(batch.annotators))
        for person in roster:
            people.setdefault(person, len(people))
        for pair in itertools.combinations(roster, 2):
            pair_batches.setdefault(pair, []).append(index)
    table = _span_table(batches, people)
    entries = []
    for (first, second), shared in pair_batches.items():
        shared_batches = np.array(shared, dtype=np.int64)
        rows_a = table.rows(people[first], shared_batches)
        rows_b = table.rows(people[second], shared_batches)
        entries.append({"annotators": [first, second], **_pair_scores(table, rows_a, rows_b, modes)})
    return entries


def pairwise_span_f1(batches: Iterable[BatchSpans], mode: str = "exact") -> list[dict[str, Any]]:
    """span_f1 of every annotator pair over the samples of the batches both annotated."""
    return [
        {"annotators": entry["annotators"], **entry[mode]} for entry in pairwise_span_agreement(batches, (mode,))
    ]


_TOKEN = re.compile(r"\S+")


def summary_tokens(text: str) -> list[tuple[int, int]]:
    """Whitespace tokens as (start, end) code-point offsets, end-exclusive."""
    return [match.span() for match in _TOKEN.finditer(text)]


@functools.cache
def _whitespace() -> np.ndarray:
    """Every code point ``\\s`` matches, asked of the regex engine itself (so tokens agree with summary_tokens)."""
    everything = "".join(map(chr, range(sys.maxunicode + 1)))
    return np.array(sorted(ord(character) for character in re.findall(r"\s", everything)), dtype=np.uint32)


def _token_bounds(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(token starts, token ends, text starts) in one string joining the texts with newlines: summary_tokens of all."""
    joined = "\n".join(texts)
    codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    word = np.concatenate(([False], ~np.isin(codes, _whitespace()), [False]))
    edges = np.diff(word.astype(np.int8))
    lengths = np.fromiter((len(text) for text in texts), dtype=np.int64, count=len(texts))
    text_starts = np.concatenate(([0], np.cumsum(lengths + 1)[:-1])) if len(texts) else np.zeros(0, dtype=np.int64)
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1), text_starts


def token_alpha(batches: Iterable[BatchSpans], scheme: str | Scheme = "C|B|Q|U") -> AlphaResult:
    """Nominal alpha with every summary token as a unit.

    A token's value from one annotator is the worst category among that
    annotator's spans covering at least one of its characters, C when none
    does; then mapped through the scheme (default: all four categories).
    Pooled over every token of every batch; per_batch as in compute_alpha.

    Computed with arrays: each span covers a contiguous run of its summary's
    tokens, so coverage is a difference array over (annotator, token) cells.
    """
    scheme = parse_scheme(scheme)
    lookup = scheme.lookup()
    groups = len(scheme.groups)
    batches = list(batches)
    names = [batch.name for batch in batches]
    rosters = [list(dict.fromkeys(batch.annotators)) for batch in batches]
    texts: list[str] = []
    text_batch: list[int] = []
    covering: list[tuple[int, int, int, int, int]] = []  # (text, roster slot, start, end, code)
    for index, (batch, roster) in enumerate(zip(batches, rosters, strict=True)):
        slot_of = {annotator: slot for slot, annotator in enumerate(roster)}
        text_of = {}
        for key, text in batch.summaries.items():
            text_of[key] = len(texts)
            texts.append(text)
            text_batch.append(index)
        for (annotator, key), spans in batch.spans.items():
            slot, text = slot_of.get(annotator), text_of.get(key)
            if slot is None or text is None:
                continue
            for start, end, category in spans:
                if category is None:
                    continue
                if category not in _CODE:
                    raise ValueError(f"batch {batch.name!r}: span category {category!r} is not one of C, B, Q, U")
                covering.append((text, slot, start, end, _CODE[category]))
    token_starts, token_ends, text_starts = _token_bounds(texts)
    # Tokens and cells, batch after batch; a batch's cells are roster slot x its tokens.
    batch_of_text = np.array(text_batch, dtype=np.int64)
    text_of_token = np.searchsorted(text_starts, token_starts, side="right") - 1
    tokens_per_batch = np.bincount(batch_of_text[text_of_token], minlength=len(batches))
    first_token = np.concatenate(([0], np.cumsum(tokens_per_batch)))
    roster_sizes = np.array([len(roster) for roster in rosters], dtype=np.int64)
    first_cell = np.concatenate(([0], np.cumsum(tokens_per_batch * roster_sizes)))
    cell_count = int(first_cell[-1])
    cell_token = np.concatenate(
        [np.tile(np.arange(first_token[b], first_token[b + 1]), roster_sizes[b]) for b in range(len(batches))]
        or [np.zeros(0, dtype=np.int64)]
    )
    worst = np.zeros(cell_count, dtype=np.int8)
    if covering:
        text, slot, start, end, code = np.array(covering, dtype=np.int64).T
        lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
        begin = text_starts[text] + np.clip(start, 0, lengths[text])
        finish = text_starts[text] + np.clip(end, 0, lengths[text])
        first = np.searchsorted(token_ends, begin, side="right")  # first token ending after the span starts
        last = np.searchsorted(token_starts, finish, side="left")  # tokens starting before the span ends
        batch = batch_of_text[text]
        base = first_cell[batch] + slot * tokens_per_batch[batch] - first_token[batch]
        some = first < last
        for value in range(1, len(CATEGORIES)):  # C (0) is the default
            chosen = some & (code == value)
            edges = np.bincount(base[chosen] + first[chosen], minlength=cell_count + 1)
            edges -= np.bincount(base[chosen] + last[chosen], minlength=cell_count + 1)
            worst[np.cumsum(edges[:-1]) > 0] = value  # ascending severity: the worst covering span wins
    values = lookup[worst]
    kept = values >= 0
    counts = np.bincount(
        cell_token[kept] * groups + values[kept], minlength=len(token_starts) * groups
    ).reshape(len(token_starts), groups)
    bounds = [(int(first_token[b]), int(first_token[b + 1])) for b in range(len(batches))]
    per_batch = _per_batch_entries(names, rosters, _alphas_by_range(counts, bounds, scheme, "nominal"), scheme)
    (value, reason, units), = _alphas_by_range(counts, [(0, len(counts))], scheme, "nominal")
    if reason is not None:
        reason = _undefined_reason(reason, rosters, scheme)
    annotators = len({person for roster in rosters for person in roster})
    return AlphaResult(value, reason, units, annotators, per_batch)
