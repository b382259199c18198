"""Sentence splitting, embedding and the similarity behind semantic highlighting."""

from __future__ import annotations

import logging
from typing import Any, Literal

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotate import embedder
from annotate.models import Job, Passage, Project, Sample
from annotate.text import split_sentences

log = logging.getLogger(__name__)
CHUNK = 64
SHADES = 5
CLOSEST = 3


class NotReady(Exception):
    """Sentences of this text are not embedded yet."""


def _stale(model: str) -> Q:
    return Q(embeddings__isnull=True) | ~Q(embedding_model=model)


def _count_stale(project_id: int, model: str) -> int:
    return (
        Passage.objects.filter(project_id=project_id).filter(_stale(model)).count()
        + Sample.objects.filter(project_id=project_id).filter(_stale(model)).count()
    )


def queue_embedding(project: Project, *, created_by: AbstractBaseUser | None = None) -> Job:
    """Create a progress row and queue the job once the surrounding transaction commits."""
    from annotate.tasks import embed_project_texts

    model = embedder.model_name()
    total = _count_stale(project.pk, model)
    job = Job.objects.create(project=project, kind=Job.Kind.EMBED, total=total, created_by=created_by,
                             options={"model": model})
    transaction.on_commit(lambda: embed_project_texts.delay(job.pk))
    return job


def _embed_rows(rows: list[Any], text_of: str, model: str) -> None:
    for row in rows:
        row.sentences = split_sentences(getattr(row, text_of))
    pieces = [getattr(row, text_of)[s:e] for row in rows for s, e in row.sentences]
    vectors = embedder.embed(pieces, model) if pieces else np.zeros((0, 0), dtype=np.float32)
    at = 0
    for row in rows:
        count = len(row.sentences)
        row.embeddings = vectors[at : at + count].tobytes() if count else b""
        row.embedding_model = model
        at += count


def run_embedding_job(job_id: int) -> Job:
    """Split and embed every text of the project not yet embedded with the configured model.

    Idempotent: a second run (or a run after a worker restart) only does what is
    still missing and never duplicates anything.
    """
    job = Job.objects.get(pk=job_id)
    if job.status == Job.Status.DONE:
        return job
    model = job.options.get("model") or embedder.model_name()
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING)
    # Rows embedded by an earlier run of this job (before a worker restart) are no longer
    # stale, so they count as done from the start; each chunk adds its own rows.
    done = max(0, job.total - _count_stale(job.project_id, model))
    try:
        for model_class, text_of in ((Passage, "text"), (Sample, "summary")):
            pending = model_class.objects.filter(project_id=job.project_id).filter(_stale(model)).order_by("pk")
            last_pk = 0
            while True:
                # Page by primary key: every chunk is an index range scan, not a re-scan from the first row.
                rows = list(pending.filter(pk__gt=last_pk).only("pk", text_of)[:CHUNK])
                if not rows:
                    break
                last_pk = rows[-1].pk
                _embed_rows(rows, text_of, model)
                with transaction.atomic():
                    model_class.objects.bulk_update(rows, ["sentences", "embeddings", "embedding_model"])
                done += len(rows)
                Job.objects.filter(pk=job.pk).update(done=min(done, job.total))
    except Exception as error:
        log.exception("embedding job %s failed", job.pk)
        Job.objects.filter(pk=job.pk).update(status=Job.Status.FAILED, error=str(error), finished_at=timezone.now())
        raise
    Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE, done=job.total, finished_at=timezone.now())
    job.refresh_from_db()
    return job


def similarity(sample: Sample, side: Literal["summary", "source"], start: int, end: int) -> dict[str, Any]:
    """Dot products of the selected text of one side with every sentence of the other side.

    ``side`` is where the selection is; the sentences scored are the other text's.
    Returns every sentence's similarity, a shade 0..SHADES-1 (min-max over the
    text) and the indexes of the closest few.
    """
    selected_text = sample.summary if side == "summary" else sample.passage.text
    target = sample.passage if side == "summary" else sample
    if not 0 <= start < end <= len(selected_text):
        raise ValueError(f"selection {start}..{end} is outside the {side} text of {len(selected_text)} characters")
    vectors = target.sentence_vectors()
    if vectors is None or target.embedding_model != embedder.model_name():
        raise NotReady("sentence embeddings are still being computed for this sample")
    query = embedder.embed([selected_text[start:end]], target.embedding_model)[0]
    scores = vectors @ query
    low, high = float(scores.min()), float(scores.max())
    spread = high - low
    shades = (
        np.zeros(len(scores), dtype=int)
        if spread <= 1e-9
        else np.minimum(SHADES - 1, ((scores - low) / spread * SHADES).astype(int))
    )
    order = np.argsort(-scores, kind="stable")[:CLOSEST]
    return {
        "side": side,
        "target": "source" if side == "summary" else "summary",
        "sentences": [
            {"index": i, "start": s, "end": e, "similarity": round(float(scores[i]), 3), "shade": int(shades[i])}
            for i, (s, e) in enumerate(target.sentences)
        ],
        "closest": [int(i) for i in order],
    }
