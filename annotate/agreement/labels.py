"""Inputs and results of sample-level alpha: batches of labels, coded once into integer arrays.

``BatchLabels`` or ``BatchCodes`` (one per batch) -> ``CodedLabels`` (every
annotator x sample cell of every batch as integer arrays, built once by
``code_labels`` and independent of the scheme) -> per scheme, a value-count
matrix (units x groups) that annotate.agreement.alpha hands to krippendorff.

Why value counts and not the annotators x samples reliability matrix: the
package reduces the matrix to exactly these counts as its first step, and
building them directly costs memory in the number of labels instead of
(all annotators ever seen) x (all samples). ``reliability_matrix`` still gives
the matrix, for export and for tests that check both paths agree.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotate.agreement.schemes import _CODE, CATEGORIES, Scheme, parse_scheme

SampleKey = Hashable


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
    # batch-mean only: how many batches the mean averages (alpha defined) and how many it leaves out (undefined).
    batches_defined: int | None = None
    batches_undefined: int | None = None

    def as_dict(self) -> dict[str, Any]:
        report = {
            "alpha": self.alpha,
            "reason": self.reason,
            "units": self.units,
            "annotators": self.annotators,
            "per_batch": [dict(entry) for entry in self.per_batch],
        }
        if self.batches_defined is not None:
            report |= {"batches_defined": self.batches_defined, "batches_undefined": self.batches_undefined}
        return report


def batch_mean_note(report: dict[str, Any]) -> str | None:
    """What a batch-mean alpha leaves out, when it leaves out any batch: "mean of 1 of 2 batches; 1 undefined".

    None for a pooled report, a mean over every batch, and one with no defined batch (its reason says why), and for
    a report kept before the counts existed (no ``batches_defined``).
    """
    defined, undefined = report.get("batches_defined"), report.get("batches_undefined")
    if not defined or not undefined:
        return None
    total = defined + undefined
    return f"mean of {defined} of {total} batches; {undefined} undefined (left out of the mean)"


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
