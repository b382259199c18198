"""Inter-annotator agreement on FaithBench sample labels and spans. Pure: no Django imports.

Alpha itself always comes from the ``krippendorff`` package. This module only
turns worst-pooled labels into what that package takes, guards the degenerate
cases (alpha undefined, said with a reason, never an exception), and adds the
views FaithBench reports: label schemes, pooled vs batch-mean, per annotator
pair, bootstrap intervals, span F1 and token-level alpha.

Data flow: ``BatchLabels`` (one per batch) -> ``_CodedLabels`` (every
annotator x sample cell of every batch as integer arrays, built once and
independent of the scheme) -> per scheme, a value-count matrix (units x groups)
-> ``krippendorff.alpha(value_counts=...)``.

Why value counts and not the annotators x samples reliability matrix: the
package reduces the matrix to exactly these counts as its first step, and
building them directly costs memory in the number of labels instead of
(all annotators ever seen) x (all samples). ``reliability_matrix`` still gives
the matrix, for export and for tests that check both paths agree.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import krippendorff
import numpy as np

from annotate.taxonomy import SEVERITY

CATEGORIES: tuple[str, ...] = ("C", "B", "Q", "U")  # severity order; index = code
_CODE: dict[str, int] = {category: SEVERITY[category] for category in CATEGORIES}
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval")
AGGREGATES: tuple[str, ...] = ("pooled", "batch-mean")
SPAN_MODES: tuple[str, ...] = ("exact", "overlap")

# Bootstrap cost is one krippendorff call per resample, linear in the units;
# past this many unit draws in total we take fewer resamples (see bootstrap_interval).
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
class _CodedLabels:
    """Every (annotator of the batch, sample of the batch) cell as parallel integer arrays.

    Units are numbered batch after batch, so one batch is the contiguous unit
    range ``bounds[b]``; sample keys only need to be unique within a batch
    (FaithBench numbers samples 0..49 in every file).
    """

    batch_names: list[str]
    rosters: list[list[str]]
    bounds: list[tuple[int, int]]
    units: list[tuple[str, SampleKey]]
    annotators: list[str]
    cell_annotator: np.ndarray
    cell_unit: np.ndarray
    cell_category: np.ndarray

    @property
    def unit_count(self) -> int:
        return len(self.units)


def _code_labels(batches: Iterable[BatchLabels]) -> _CodedLabels:
    annotator_index: dict[str, int] = {}
    names: list[str] = []
    rosters: list[list[str]] = []
    bounds: list[tuple[int, int]] = []
    units: list[tuple[str, SampleKey]] = []
    annotator_parts: list[np.ndarray] = []
    unit_parts: list[np.ndarray] = []
    category_parts: list[np.ndarray] = []
    for batch in batches:
        roster = list(dict.fromkeys(batch.annotators))
        samples = list(dict.fromkeys(batch.samples))
        first = len(units)
        names.append(batch.name)
        rosters.append(roster)
        bounds.append((first, first + len(samples)))
        units.extend((batch.name, key) for key in samples)
        if not roster or not samples:
            continue
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
        indices = np.array([annotator_index.setdefault(a, len(annotator_index)) for a in roster], dtype=np.int64)
        annotator_parts.append(np.repeat(indices, len(samples)))
        unit_parts.append(np.tile(np.arange(first, first + len(samples), dtype=np.int64), len(roster)))
        category_parts.append(block.ravel())

    def joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    return _CodedLabels(
        batch_names=names,
        rosters=rosters,
        bounds=bounds,
        units=units,
        annotators=list(annotator_index),
        cell_annotator=joined(annotator_parts, np.int64),
        cell_unit=joined(unit_parts, np.int64),
        cell_category=joined(category_parts, np.int8),
    )


def _value_counts(coded: _CodedLabels, scheme: Scheme) -> np.ndarray:
    """units x groups: how many annotators gave each unit each value (dropped categories count nowhere)."""
    groups = len(scheme.groups)
    values = scheme.lookup()[coded.cell_category]
    kept = values >= 0
    flat = coded.cell_unit[kept] * groups + values[kept]
    return np.bincount(flat, minlength=coded.unit_count * groups).reshape(coded.unit_count, groups)


def reliability_matrix(
    batches: Iterable[BatchLabels], scheme: str | Scheme
) -> tuple[list[str], list[tuple[str, SampleKey]], np.ndarray]:
    """(annotators, units as (batch, sample), annotators x units values with NaN for missing)."""
    scheme = parse_scheme(scheme)
    coded = _code_labels(batches)
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


def _per_batch(coded: _CodedLabels, counts: np.ndarray, scheme: Scheme, level: str) -> list[dict[str, Any]]:
    entries = []
    for name, roster, (start, stop) in zip(coded.batch_names, coded.rosters, coded.bounds, strict=True):
        value, reason, units = _alpha_from_counts(counts[start:stop], scheme, level)
        if reason is not None:
            reason = _undefined_reason(reason, [roster], scheme)
        entries.append({"batch": name, "alpha": value, "reason": reason, "units": units, "annotators": len(roster)})
    return entries


def compute_alpha(
    batches: Iterable[BatchLabels], scheme: str | Scheme, level: str = "nominal", aggregate: str = "pooled"
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
    coded = _code_labels(batches)
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

    Each resample is one krippendorff call over all units (~30 ms at 100,000
    units), so past ``max_draws`` units drawn in total we take fewer, never
    fewer than BOOTSTRAP_MIN_RESAMPLES. With that many units the interval is
    narrow and its percentiles are stable long before 1,000 resamples.
    """
    if units <= 0:
        return 0
    affordable = max(BOOTSTRAP_MIN_RESAMPLES, max_draws // units)
    return max(1, min(requested, affordable))


def bootstrap_interval(
    batches: Iterable[BatchLabels],
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
    """
    scheme = parse_scheme(scheme)
    check_level(level)
    if samples < 1:
        raise ValueError("samples must be at least 1")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1, e.g. 0.95")
    counts = _value_counts(_code_labels(batches), scheme)
    counts = counts[counts.sum(axis=1) >= 2]
    point, _, units = _alpha_from_counts(counts, scheme, level)
    if point is None:
        return None
    rng = np.random.default_rng(seed)
    estimates = []
    for _ in range(bootstrap_resamples(units, samples, max_draws)):
        value, _, _ = _alpha_from_counts(counts[rng.integers(0, units, size=units)], scheme, level)
        if value is not None:
            estimates.append(value)
    if not estimates:
        return None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(estimates, [tail, 100 - tail])
    return float(low), float(high)


def pairwise_alpha(
    batches: Iterable[BatchLabels], scheme: str | Scheme, level: str = "nominal"
) -> list[dict[str, Any]]:
    """Alpha of every pair of annotators over the samples both gave a value (not dropped by the scheme).

    One entry per pair that shares at least one batch:
    ``{"annotators": [a, b], "alpha", "reason", "units"}``, a and b in roster order.
    """
    scheme = parse_scheme(scheme)
    check_level(level)
    coded = _code_labels(batches)
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
    """
    if mode not in SPAN_MODES:
        raise ValueError(f"unknown span mode {mode!r}; use one of {', '.join(SPAN_MODES)}")
    clean_a = {key: [s for s in spans if s[2] is not None] for key, spans in spans_a.items()}
    clean_b = {key: [s for s in spans if s[2] is not None] for key, spans in spans_b.items()}
    samples = list(dict.fromkeys([*clean_a, *clean_b]))
    categories = sorted(
        {s[2] for spans in [*clean_a.values(), *clean_b.values()] for s in spans},
        key=lambda category: (SEVERITY.get(category, 99), category),  # type: ignore[arg-type]
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


def pairwise_span_f1(batches: Iterable[BatchSpans], mode: str = "exact") -> list[dict[str, Any]]:
    """span_f1 of every annotator pair over the samples of the batches both annotated."""
    mine: dict[tuple[str, str], tuple[dict[Any, list[Span]], dict[Any, list[Span]]]] = {}
    for batch in batches:
        roster = list(dict.fromkeys(batch.annotators))
        for first, second in itertools.combinations(roster, 2):
            spans_a, spans_b = mine.setdefault((first, second), ({}, {}))
            for key in batch.summaries:
                unit = (batch.name, key)
                spans_a[unit] = list(batch.spans.get((first, key), []))
                spans_b[unit] = list(batch.spans.get((second, key), []))
    return [{"annotators": [a, b], **span_f1(sa, sb, mode)} for (a, b), (sa, sb) in mine.items()]


_TOKEN = re.compile(r"\S+")


def summary_tokens(text: str) -> list[tuple[int, int]]:
    """Whitespace tokens as (start, end) code-point offsets, end-exclusive."""
    return [match.span() for match in _TOKEN.finditer(text)]


def token_alpha(batches: Iterable[BatchSpans], scheme: str | Scheme = "C|B|Q|U") -> AlphaResult:
    """Nominal alpha with every summary token as a unit.

    A token's value from one annotator is the worst category among that
    annotator's spans covering at least one of its characters, C when none
    does; then mapped through the scheme (default: all four categories).
    Pooled over every token of every batch; per_batch as in compute_alpha.
    """
    scheme = parse_scheme(scheme)
    lookup = scheme.lookup()
    groups = len(scheme.groups)
    names: list[str] = []
    rosters: list[list[str]] = []
    batch_counts: list[np.ndarray] = []
    for batch in batches:
        roster = list(dict.fromkeys(batch.annotators))
        names.append(batch.name)
        rosters.append(roster)
        parts = []
        for key, text in batch.summaries.items():
            tokens = np.array(summary_tokens(text), dtype=np.int64).reshape(-1, 2)
            counts = np.zeros((len(tokens), groups), dtype=np.int64)
            rows = np.arange(len(tokens))
            for annotator in roster:
                codes = np.zeros(len(tokens), dtype=np.int64)
                for start, end, category in batch.spans.get((annotator, key), []):
                    if category is None:
                        continue
                    if category not in _CODE:
                        raise ValueError(f"batch {batch.name!r}: span category {category!r} is not one of C, B, Q, U")
                    covered = (tokens[:, 0] < end) & (tokens[:, 1] > start)
                    codes[covered] = np.maximum(codes[covered], _CODE[category])
                values = lookup[codes]
                kept = values >= 0
                np.add.at(counts, (rows[kept], values[kept]), 1)
            parts.append(counts)
        batch_counts.append(np.concatenate(parts) if parts else np.zeros((0, groups), dtype=np.int64))
    per_batch = []
    for name, roster, counts in zip(names, rosters, batch_counts, strict=True):
        value, reason, units = _alpha_from_counts(counts, scheme, "nominal")
        if reason is not None:
            reason = _undefined_reason(reason, [roster], scheme)
        per_batch.append({"batch": name, "alpha": value, "reason": reason, "units": units, "annotators": len(roster)})
    everything = np.concatenate(batch_counts) if batch_counts else np.zeros((0, groups), dtype=np.int64)
    value, reason, units = _alpha_from_counts(everything, scheme, "nominal")
    if reason is not None:
        reason = _undefined_reason(reason, rosters, scheme)
    annotators = len({person for roster in rosters for person in roster})
    return AlphaResult(value, reason, units, annotators, per_batch)
