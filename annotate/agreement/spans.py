"""Span agreement: precision, recall and F1 of two annotators' spans, and of every pair at once.

Spans match exactly or by overlap (``SPAN_MODES``), overall and per label
category. ``pairwise_span_agreement`` scores every pair of a project with
arrays, since a project has too many spans to compare pair by pair in Python.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotate.agreement.labels import SampleKey
from annotate.taxonomy import SEVERITY

SPAN_MODES: tuple[str, ...] = ("exact", "overlap")

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
