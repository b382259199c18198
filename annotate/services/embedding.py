"""Sentence splitting, embedding and the similarity behind semantic highlighting."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, Literal

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.db import OperationalError, transaction
from django.db.models import F, Q, QuerySet, Value
from django.db.models.functions import Least
from django.utils import timezone

from annotate import embedder, highlight
from annotate.models import Job, Passage, Project, Sample
from annotate.services import jobs
from annotate.text import split_sentences

log = logging.getLogger(__name__)
CHUNK = 64
SHADES = 5


class NotReady(Exception):
    """Sentences of this text are not embedded yet."""


class Loading(Exception):
    """The embedding model is still loading in the background (web process start): ask again in a moment."""


def _stale(model: str) -> Q:
    return Q(embeddings__isnull=True) | ~Q(embedding_model=model)


def count_stale(project_id: int, model: str) -> int:
    return (
        Passage.objects.filter(project_id=project_id).filter(_stale(model)).count()
        + Sample.objects.filter(project_id=project_id).filter(_stale(model)).count()
    )


def queue_embedding(project: Project, *, created_by: AbstractBaseUser | None = None) -> Job:
    """Create a progress row and queue the job once the surrounding transaction commits.

    When the broker refuses the task, the job (this object too) is failed with the error instead of staying queued.
    """
    from annotate.tasks import embed_project_texts

    model = embedder.model_name()
    total = count_stale(project.pk, model)
    job = Job.objects.create(project=project, kind=Job.Kind.EMBED, total=total, created_by=created_by,
                             options={"model": model})
    jobs.queue_job(job, embed_project_texts)  # a refused send fails the job, saying why (job.error)
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


# A text longer than this is embedded SENTENCE_CHUNK sentences at a time, and a slice may stop between
# two chunks; its vectors so far wait in the row (see _embed_long_text) until the rest is done.
LONG_TEXT_CHARS = 20_000
SENTENCE_CHUNK = 256
PARTIAL = "partial:"  # embedding_model of a text half embedded: "partial:<sentences done>:<model>"


class _Slice:
    """How much one run may do before it hands the rest to a new task: seconds and sentences, None = no limit."""

    def __init__(self, seconds: float | None, sentences: int | None) -> None:
        self.deadline = time.monotonic() + seconds if seconds is not None else None
        self.sentences_left = sentences
        self.spent = 0

    def spend(self, sentences: int) -> None:
        self.spent += sentences
        if self.sentences_left is not None:
            self.sentences_left -= sentences

    @property
    def over(self) -> bool:
        if not self.spent:  # every slice gets some work done, however small its limits
            return False
        return (self.sentences_left is not None and self.sentences_left <= 0) or (
            self.deadline is not None and time.monotonic() >= self.deadline
        )


def _max_length(model_class: type[Passage | Sample], name: str) -> int:
    return model_class._meta.get_field(name).max_length or 0


def _short_text_groups(rows: list[Any], text_of: str) -> list[list[Any]]:
    """Rows in groups of at most LONG_TEXT_CHARS characters in all (a longer row alone), embedded a group at a time."""
    groups: list[list[Any]] = [[]]
    size = 0
    for row in rows:
        length = len(getattr(row, text_of))
        if groups[-1] and size + length > LONG_TEXT_CHARS:
            groups.append([])
            size = 0
        groups[-1].append(row)
        size += length
    return [group for group in groups if group]


def _save_embedded(model_class: type[Passage | Sample], row: Any, previous: str, model: str, **values: Any) -> int:
    """Write a row's sentences and vectors unless another run got there first; 1 when written, else 0.

    The row must still be stale and hold what this run read (``previous``), so a
    text is counted done once however many runs of a job (or jobs) meet it.
    """
    return (
        model_class.objects.filter(pk=row.pk, embedding_model=previous).filter(_stale(model)).update(**values)
    )


def _resume_point(row: Any, model: str, sentence_count: int) -> tuple[int, list[bytes]]:
    """Sentences already embedded of a half-done long text, and their vectors; (0, []) to start afresh."""
    marker = row.embedding_model or ""
    if not marker.startswith(PARTIAL):
        return 0, []
    done_text, _, marker_model = marker[len(PARTIAL):].partition(":")
    blob = bytes(row.embeddings or b"")
    done = int(done_text) if done_text.isdigit() else 0
    if marker_model != model or not 0 < done < sentence_count or not blob or len(blob) % (4 * done):
        return 0, []
    return done, [blob]


def _embed_long_text(model_class: type[Passage | Sample], row: Any, text_of: str, model: str, budget: _Slice) -> int:
    """Embed one long text SENTENCE_CHUNK sentences at a time; 1 when it is done and counted, else 0.

    When the slice runs out first, the vectors so far are kept in the row with
    embedding_model "partial:<n>:<model>" and sentences left empty (the texts
    count as not embedded everywhere until the last chunk), and the next slice
    goes on from sentence n.
    """
    text = getattr(row, text_of)
    sentences = split_sentences(text)
    previous = row.embedding_model
    done, vectors = _resume_point(row, model, len(sentences))
    while done < len(sentences):
        if budget.over and len(f"{PARTIAL}{done}:{model}") <= _max_length(model_class, "embedding_model"):
            if done:
                _save_embedded(model_class, row, previous, model, sentences=None, embeddings=b"".join(vectors),
                               embedding_model=f"{PARTIAL}{done}:{model}")
            return 0
        chunk = sentences[done : done + SENTENCE_CHUNK]
        vectors.append(embedder.embed([text[s:e] for s, e in chunk], model).tobytes())
        done += len(chunk)
        budget.spend(len(chunk))
    return _save_embedded(model_class, row, previous, model, sentences=sentences, embeddings=b"".join(vectors),
                          embedding_model=model)


def run_embedding_job(
    job_id: int, *, max_seconds: float | None = None, max_sentences: int | None = None, lock_held: bool = False
) -> Job:
    """Split and embed every text of the project not yet embedded with the configured model.

    Without limits it runs to the end. With ``max_seconds`` or ``max_sentences``
    (the Celery task passes the EMBEDDING_SLICE_* settings) it stops once either
    is spent, queues the rest as a new task behind whatever else is queued, and
    returns the job still running. Run in slices, a slice that finds the database
    locked for longer than its busy timeout (another process holding SQLite) is
    queued again after a delay (``LOCKED_RETRY_SECONDS``, saying so in the job's
    error) instead of failing the job; the job fails after the last try. Idempotent and restart-safe: a second run (or a
    run after a worker restart) only does what is still missing, and each text is
    counted done once, by the run that wrote it. One process at a time per job
    (its lock): a second delivery while the first runs returns at once, and the
    next slice is queued once the lock is let go. A job that has ended (done, or
    cancelled by an admin) is left as it is: a cancelled job stops after the
    chunk in hand, keeping the texts it embedded, and a new job (the embed
    command) does the rest. ``lock_held``: the caller took the job's lock
    before the job was committed and holds it until this returns (the embed
    command, through jobs.start_held; it gives no limits, so no next slice is
    queued under its lock).
    """
    with nullcontext(True) if lock_held else jobs.job_lock(job_id) as held:
        job = Job.objects.get(pk=job_id)
        if not held or not job.is_active:
            return job
        sliced = max_seconds is not None or max_sentences is not None
        after = _embed_slice(job, max_seconds=max_seconds, max_sentences=max_sentences, retry_locked=sliced)
    if after is not None:
        from annotate.tasks import embed_project_texts

        # A broker that refuses the next slice leaves the job running, for the next worker start to queue again.
        jobs.queue_job(job, embed_project_texts, next_slice=True, countdown=after or None)
    elif not _active(job.pk).exists():
        jobs.forget_job_lock(job.pk)
    job.refresh_from_db()
    return job


def _active(job_id: int) -> QuerySet[Job]:
    """The job's row while it is queued or running: a write through it leaves a cancelled job as it is."""
    return Job.objects.filter(pk=job_id, status__in=jobs.ACTIVE)


# A job's option: embed every text of the project again (`manage.py embed --all`), also those already embedded
# with its model. Their markers are cleared when the job first runs (then MARKERS_CLEARED is set), so that a job
# waiting for a worker leaves highlighting working meanwhile.
EVERY_TEXT = "every_text"
MARKERS_CLEARED = "markers_cleared"


def _clear_markers_once(job: Job) -> None:
    """For an EVERY_TEXT job, mark every text of the project stale, once (the job's lock is held)."""
    if not job.options.get(EVERY_TEXT) or job.options.get(MARKERS_CLEARED):
        return
    options = {**job.options, MARKERS_CLEARED: True}
    with transaction.atomic():
        if not _active(job.pk).update(options=options):
            return  # cancelled before it ran: the texts keep their vectors
        for model_class in (Passage, Sample):
            model_class.objects.filter(project_id=job.project_id).update(embedding_model="")
    job.options = options


# A slice that meets a locked database is queued again after these many seconds, one a try (``_locked_retry``); the
# tries are counted in the job's options (LOCKED_TRIES) and the job fails on the lock after the last one.
LOCKED_RETRY_SECONDS: tuple[float, ...] = (5, 15, 60, 120, 300)
LOCKED_TRIES = "locked_tries"


def _is_busy(error: BaseException) -> bool:
    """SQLite's "database is locked" once its busy timeout ran out (or a PostgreSQL deadlock, or a "busy" refusal)."""
    return jobs.is_lock_error(error) or (isinstance(error, OperationalError) and "busy" in str(error).lower())


def _locked_retry(job: Job, error: BaseException) -> float | None:
    """The seconds after which the slice that met ``error`` (a locked database) is tried again, recorded in the job
    (its error says so, its options count the try); None when the tries are spent (the job then fails).

    The tries count the locks in a row: a chunk embedded after one starts them afresh. If even this record meets
    the lock, OperationalError is raised: the
    caller leaves the job running, not queued again, and the next worker start goes on with it.
    """
    tries = int(job.options.get(LOCKED_TRIES, 0) or 0)
    if tries >= len(LOCKED_RETRY_SECONDS):
        return None
    after = LOCKED_RETRY_SECONDS[tries]
    message = (f"The database was locked by another process for longer than its busy timeout ({error}); "
               f"embedding goes on in {after:g} s, keeping what it has done (try {tries + 1} of "
               f"{len(LOCKED_RETRY_SECONDS)}).")
    options = {**job.options, LOCKED_TRIES: tries + 1}
    jobs.retry_when_locked(lambda: _active(job.pk).update(options=options, error=message))
    job.options, job.error = options, message
    log.warning("embedding job %s: %s", job.pk, message)
    return after


def _embed_slice(job: Job, *, max_seconds: float | None, max_sentences: int | None,
                 retry_locked: bool = False) -> float | None:
    """Embed what the slice's limits allow; when texts are left for a next slice (the job stays running), the
    seconds after which it may run (0: at once), else None.

    A failure marks the job failed, trying again while the database is locked
    (the error that stopped it may be that very lock), then is raised. With
    ``retry_locked`` (the job runs in slices, queued by the worker), a locked
    database instead queues the slice again later (``_locked_retry``) while
    tries are left. A job cancelled meanwhile stops after the chunk in hand and
    keeps its cancel's status.
    """
    model = job.options.get("model") or embedder.model_name()
    budget = _Slice(max_seconds, max_sentences)

    def count(finished: int) -> None:
        if finished:
            Job.objects.filter(pk=job.pk).update(done=Least(F("done") + finished, Value(job.total)))
            if job.options.get(LOCKED_TRIES):
                # Past the lock and going on: a later lock gets its tries afresh, and the lock's note goes.
                options = {key: value for key, value in job.options.items() if key != LOCKED_TRIES}
                if _active(job.pk).update(options=options, error=""):
                    job.options, job.error = options, ""

    try:
        _clear_markers_once(job)
        # Rows embedded by an earlier run or slice of this job are no longer stale, so they count as done
        # from the start; each text this run finishes adds one.
        if not _active(job.pk).update(
            status=Job.Status.RUNNING, done=max(0, min(job.total, job.total - count_stale(job.project_id, model)))
        ):
            return None  # cancelled between the read and now
        for model_class, text_of in ((Passage, "text"), (Sample, "summary")):
            _embed_stale(job, model_class, text_of, model, budget, count)
        if not _active(job.pk).exists():
            log.info("embedding job %s was cancelled: it stops, keeping the texts it embedded", job.pk)
            return None
        if budget.over and count_stale(job.project_id, model):
            return 0
        _active(job.pk).update(status=Job.Status.DONE, done=job.total, error="", finished_at=timezone.now())
    except Exception as error:
        if retry_locked and _is_busy(error):
            try:
                after = _locked_retry(job, error)
            except OperationalError:
                # The record met the lock too: left running, and not queued, for the next worker start.
                log.warning("embedding job %s: database locked (%s); left for the next worker start", job.pk, error)
                return None
            if after is not None:
                return after
        log.exception("embedding job %s failed", job.pk)
        jobs.mark_failed(job.pk, str(error), only_if_active=True)
        raise
    return None


def _embed_stale(job: Job, model_class: type[Passage | Sample], text_of: str, model: str, budget: _Slice,
                 count: Callable[[int], None]) -> None:
    """Embed the project's stale rows of one model, a chunk at a time, until they or the slice run out."""
    pending = model_class.objects.filter(project_id=job.project_id).filter(_stale(model)).order_by("pk")
    last_pk = 0
    # A cancel (an admin's, or a Ctrl-C in the embed command: jobs.cancel_if_interrupted) stops it after the group
    # of texts in hand.
    while not budget.over and not jobs.cancel_if_interrupted(job.pk) and _active(job.pk).exists():
        # Page by primary key: every chunk is an index range scan, not a re-scan from the first row.
        rows = list(pending.filter(pk__gt=last_pk).only("pk", text_of, "embedding_model")[:CHUNK])
        if not rows:
            return
        last_pk = rows[-1].pk
        long = [row for row in rows if len(getattr(row, text_of)) > LONG_TEXT_CHARS
                or (row.embedding_model or "").startswith(PARTIAL)]
        short = [row for row in rows if row not in long]
        for group in _short_text_groups(short, text_of):
            if budget.over or jobs.cancel_if_interrupted(job.pk):
                break
            previous = {row.pk: row.embedding_model for row in group}
            _embed_rows(group, text_of, model)
            with transaction.atomic():
                count(sum(
                    _save_embedded(model_class, row, previous[row.pk], model, sentences=row.sentences,
                                   embeddings=row.embeddings, embedding_model=model)
                    for row in group
                ))
            budget.spend(sum(len(row.sentences) for row in group))
        for row in long:
            if not budget.over:
                count(_embed_long_text(model_class, row, text_of, model, budget))


def similarity(sample: Sample, side: Literal["summary", "source"], start: int, end: int) -> dict[str, Any]:
    """Rank every sentence of the other text against a selection in one side (annotate.highlight).

    ``side`` is where the selection is; the sentences scored are the other text's.
    Returns every sentence's ranking score (``similarity``, higher is closer), a
    shade 0..SHADES-1 (``_shades``) and ``closest``: the sentences the evidence is
    strong enough to point at, best first, possibly none. Raises NotReady while
    the other text has no vectors of the configured model (after queuing the
    project's re-embedding where none is under way: reembedding.recompute_stale),
    saying why and what is being done; Loading while the model is still loading.
    """
    selected_text = sample.summary if side == "summary" else sample.passage.text
    selected = sample if side == "summary" else sample.passage
    target = sample.passage if side == "summary" else sample
    if not 0 <= start < end <= len(selected_text):
        raise ValueError(f"selection {start}..{end} is outside the {side} text of {len(selected_text)} characters")
    vectors = target.sentence_vectors()
    if vectors is None or target.embedding_model != embedder.model_name():
        from annotate.services import reembedding

        # Vectors of another model (EMBEDDING_MODEL changed) or none: make sure a job is on it, and say which.
        outcome = reembedding.recompute_stale(sample.project)
        raise NotReady(reembedding.not_ready_message(sample.project, target, outcome))
    model = target.embedding_model
    if not embedder.is_loaded(model):
        failure = embedder.load_error(model)
        if failure is not None:
            raise failure
        # Never wait for a load inside a request: it takes seconds. The page retries.
        embedder.start_loading(model)
        raise Loading("the embedding model is still loading")
    ranking = highlight.rank(
        selected_text=selected_text,
        start=start,
        end=end,
        # The embedding job stores both texts' sentences; split the same way if this side's are not stored yet.
        selected_sentences=selected.sentences or split_sentences(selected_text),
        target_text=sample.passage.text if side == "summary" else sample.summary,
        target_sentences=target.sentences,
        target_vectors=vectors,
        encode_tokens=functools.partial(embedder.token_vectors, name=model),
    )
    shades = _shades(ranking.scores, ranking.closest)
    return {
        "side": side,
        "target": "source" if side == "summary" else "summary",
        "sentences": [
            {"index": i, "start": s, "end": e, "similarity": round(ranking.scores[i], 3), "shade": shades[i]}
            for i, (s, e) in enumerate(target.sentences)
        ],
        "closest": ranking.closest,
    }


def _shades(scores: list[float], closest: list[int]) -> list[int]:
    """SHADES-1 for the closest sentences; the others 0..SHADES-2 by score, min-max over the text.

    When nothing is close enough to point at, every sentence stays at 0 or 1, so
    the page does not paint noise as if it were evidence.
    """
    values = np.asarray(scores, dtype=np.float64)
    if not len(values):
        return []
    low, spread = float(values.min()), float(values.max() - values.min())
    relative = (values - low) / spread if spread > 1e-9 else np.zeros(len(values))
    top = SHADES - 2 if closest else 1
    shades = np.minimum(top, (relative * (top + 1)).astype(int))
    shades[closest] = SHADES - 1
    return [int(shade) for shade in shades]
