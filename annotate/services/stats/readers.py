"""Row readers: a project's samples and a round's spans as numpy columns, each read once.

Labels are read as JSON text and classified once per distinct text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models import TextField
from django.db.models.functions import Cast

from annotate.models import Project, Sample, SpanAnnotation
from annotate.taxonomy import SEVERITY, category_of, label_categories


@dataclass
class _Samples:
    """Columns of the project's samples (or one batch's), in id order."""

    ids: np.ndarray
    batch: np.ndarray
    passage: np.ndarray
    position: np.ndarray
    generator: list[str]
    metadata: list[dict[str, Any]]  # empty unless asked for
    summary: list[str]  # empty unless asked for

    def index_of(self, sample_ids: np.ndarray) -> np.ndarray:
        """Row of each sample id, -1 for ids not read."""
        if not len(self.ids):
            return np.full(len(sample_ids), -1, dtype=np.int64)
        rows = np.minimum(np.searchsorted(self.ids, sample_ids), len(self.ids) - 1)
        return np.where(self.ids[rows] == sample_ids, rows, -1)


def _read_samples(
    project: Project, *, batch_id: int | None = None, metadata: bool = False, summary: bool = False
) -> _Samples:
    rows = Sample.objects.filter(project=project)
    if batch_id is not None:
        rows = rows.filter(batch_id=batch_id)
    columns: list[Any] = ["id", "batch_id", "passage_id", "position", "generator"]
    if metadata:
        columns.append(Cast("metadata", TextField()))  # parsed here: no per-row converter
    if summary:
        columns.append("summary")
    found = list(rows.order_by("id").values_list(*columns))
    parts = list(zip(*found, strict=True)) if found else [()] * len(columns)

    def numbers(index: int) -> np.ndarray:
        return np.array(parts[index], dtype=np.int64)

    parsed: list[dict[str, Any]] = []
    if metadata:  # one json.loads over all rows: twice as fast as one per row
        values = json.loads("[" + ",".join("null" if text is None else text for text in parts[5]) + "]")
        parsed = [value if isinstance(value, dict) else {} for value in values]
    return _Samples(
        ids=numbers(0),
        batch=numbers(1),
        passage=numbers(2),
        position=numbers(3),
        generator=list(parts[4]),
        metadata=parsed,
        summary=list(parts[-1]) if summary else [],
    )


@dataclass
class _Spans:
    """Spans of a round with a counted label: columns as arrays, in no particular order."""

    sample: np.ndarray
    user: np.ndarray
    code: np.ndarray  # worst category of the span's labels: C=0 .. U=3
    start: np.ndarray
    end: np.ndarray


def _read_spans(project: Project, round: int, *, batch_id: int | None = None, offsets: bool = False) -> _Spans:
    """Spans with a label that counts (an empty label list, or a row that is not a list, is ignored).

    Labels are read as JSON text; a project has few distinct label lists, so
    each distinct text is parsed and classified once.
    """
    categories = label_categories(project.taxonomy or {})
    rows = SpanAnnotation.objects.filter(sample__project=project, round=round)
    if batch_id is not None:
        rows = rows.filter(sample__batch_id=batch_id)
    columns: list[Any] = ["sample_id", "annotator_id", Cast("labels", TextField())]
    if offsets:
        columns += ["start", "end"]
    found = list(rows.order_by().values_list(*columns))
    parts = list(zip(*found, strict=True)) if found else [()] * len(columns)
    code_of: dict[str | None, int] = {}

    def classify(text: str | None) -> int:
        labels = json.loads(text) if text is not None else None
        if not isinstance(labels, list):
            return -1  # a malformed row
        category = category_of(tuple(labels), categories)
        return -1 if category is None else SEVERITY[category]

    codes = np.array([code_of[text] if text in code_of else code_of.setdefault(text, classify(text))
                      for text in parts[2]], dtype=np.int8)
    counted = codes >= 0
    return _Spans(
        sample=np.array(parts[0], dtype=np.int64)[counted],
        user=np.array(parts[1], dtype=np.int64)[counted],
        code=codes[counted],
        start=np.array(parts[3], dtype=np.int64)[counted] if offsets else np.zeros(0, dtype=np.int64),
        end=np.array(parts[4], dtype=np.int64)[counted] if offsets else np.zeros(0, dtype=np.int64),
    )
