"""What every export format reads: a project's samples in chunks with their spans, and annotators' names.

Samples are read CHUNK at a time with keyset pagination, so memory stays flat however large the project.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q

from annotate.models import Assignment, Batch, Project, Sample, SpanAnnotation
from annotate.services.pseudonyms import pseudonyms_for

CHUNK = 2000


class _Names:
    """Annotator names as shown in an export: usernames, or the project's pseudonyms ("Annotator A"),
    the same letters the round-2 page shows (annotate.services.pseudonyms)."""

    def __init__(self, project: Project, pseudonyms: bool) -> None:
        self.pseudonyms = pseudonyms
        with_spans = SpanAnnotation.objects.filter(sample__project=project).values_list("annotator_id", flat=True)
        assigned = Assignment.objects.filter(batch__project=project).values_list("annotator_id", flat=True)
        ids = set(with_spans) | set(assigned)
        self.names = (
            pseudonyms_for(project, ids)
            if pseudonyms
            else dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))
        )

    def __call__(self, user_id: int) -> str:
        return self.names.get(user_id, str(user_id))


def _batch_samples(batch: Batch, round: int) -> Iterator[tuple[Sample, list[dict]]]:
    """A batch's samples in order with their spans of one round, CHUNK samples a query."""
    samples = Sample.objects.filter(batch=batch).select_related("passage", "batch", "gold").order_by("position", "id")
    after: tuple[int, int] | None = None
    while True:
        page = samples
        if after is not None:  # keyset pagination keeps each query cheap on large batches
            page = samples.filter(Q(position__gt=after[0]) | Q(position=after[0], id__gt=after[1]))
        chunk = list(page[:CHUNK])
        if not chunk:
            return
        spans: dict[int, list[dict]] = defaultdict(list)
        rows = SpanAnnotation.objects.filter(sample__in=[s.pk for s in chunk], round=round).order_by("id").values(
            "id", "sample_id", "annotator_id", "round", "start", "end", "text", "labels", "note",
            "source_start", "source_end", "source_text", "imported_fields",
        )
        for row in rows:
            spans[row["sample_id"]].append(row)
        for sample in chunk:
            yield sample, spans.get(sample.pk, [])
        after = (chunk[-1].position, chunk[-1].pk)


def _project_samples(project: Project, round: int, progress: Any = None) -> Iterator[tuple[Sample, list[dict]]]:
    done = 0
    for batch in project.batches.all():
        for item in _batch_samples(batch, round):
            yield item
            done += 1
            if progress and done % CHUNK == 0:
                progress(done)


def _sample_id(sample: Sample) -> Any:
    return sample.imported_fields.get("sample_id", sample.external_id or sample.pk)


class _Progress:
    """Samples written so far across a whole export, reported to ``progress`` every CHUNK samples."""

    def __init__(self, progress: Any = None) -> None:
        self.progress = progress
        self.done = 0

    def add(self) -> None:
        self.done += 1
        if self.progress and self.done % CHUNK == 0:
            self.progress(self.done)
