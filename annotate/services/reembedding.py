"""Bringing a project's sentence vectors up to the configured model (EMBEDDING_MODEL), and cancelling an embedding job.

Only an import used to queue an embedding job, and a text counts as embedded
only with the configured model: after EMBEDDING_MODEL changed, every existing
text stayed "not embedded" for good and highlighting answered 409 "still being
computed" while nothing was. Now the texts that need it are embedded again:

- by the ``embed`` command (``start_embedding``), in the foreground or queued;
- by a similarity request that finds its text's vectors stale
  (``recompute_stale``): it queues one job for the project, not one per
  request: while an embedding job of the project is queued or running nothing
  new is queued, and after a job for the configured model failed or was
  cancelled a person decides (the command), so a job that cannot succeed is not
  queued again and again.

The embedding job (annotate.services.embedding) replaces only stale rows
(missing vectors, or vectors of another model): texts already embedded with the
configured model are skipped, so a re-embedding, like a resumed or repeated
job, never does a text twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet

from annotate import embedder
from annotate.models import Job, Passage, Project, Sample
from annotate.services import jobs
from annotate.services.embedding import EVERY_TEXT, PARTIAL, count_stale, queue_embedding


class EmbedRefused(Exception):
    """The command cannot start an embedding job now; the message says why and what to do."""


def embedding_jobs(project: Project) -> QuerySet[Job]:
    return Job.objects.filter(project=project, kind=Job.Kind.EMBED).order_by("-pk")


def job_model(job: Job) -> str:
    """The model a job embeds with (``options["model"]``, set when it was queued)."""
    return str(job.options.get("model") or embedder.model_name())


def made_with(row: Passage | Sample) -> str:
    """The model a text's vectors were made with ("" for none); a half-embedded long text's model too."""
    marker = row.embedding_model or ""
    if marker.startswith(PARTIAL):
        return marker[len(PARTIAL):].partition(":")[2]
    return marker


def stale_count(project: Project) -> int:
    """Texts (passages and summaries) not embedded with the configured model."""
    return count_stale(project.pk, embedder.model_name())


def _lock_project(project: Project) -> None:
    """Inside a transaction: one caller at a time per project decides whether to queue (PostgreSQL locks the row;
    SQLite's IMMEDIATE transactions already run one writer at a time)."""
    list(Project.objects.select_for_update().filter(pk=project.pk).values_list("pk", flat=True))


@dataclass(frozen=True)
class Recompute:
    """What ``recompute_stale`` found or did: the job that embeds the project's stale texts (queued or running,
    queued just now, or the last one for the configured model that failed or was cancelled), or None when
    nothing is stale any more."""

    job: Job | None
    queued_now: bool = False


def recompute_stale(project: Project) -> Recompute:
    """Make sure a job embeds the project's stale texts with the configured model; queue one only when needed.

    Nothing new while any embedding job of the project is queued or running
    (its job is answered), nor when nothing is stale. After the last job for the
    configured model failed or was cancelled, that job is answered and nothing is
    queued: the embed command starts it again. Otherwise one job is queued (on
    commit); concurrent callers wait for each other on the project's row, so
    only the first queues it.
    """
    with transaction.atomic():
        _lock_project(project)
        active = embedding_jobs(project).filter(status__in=jobs.ACTIVE).first()
        if active is not None:
            return Recompute(active)
        if not stale_count(project):
            return Recompute(None)
        latest = embedding_jobs(project).filter(options__model=embedder.model_name()).first()
        if latest is not None and latest.status == Job.Status.FAILED:
            return Recompute(latest)
        return Recompute(queue_embedding(project), queued_now=True)


def not_ready_message(project: Project, row: Passage | Sample, outcome: Recompute) -> str:
    """What a similarity request is told while the text it scores has no vectors of the configured model: why, and
    what is being done about it (the job, and whether a worker seems to run it)."""
    current = embedder.model_name()
    old = made_with(row)
    other_model = bool(old) and old != current
    command = f"`manage.py embed --project {project.slug}`"
    job = outcome.job
    if job is None:  # a job finished between the read and now
        return f"the sentence vectors have just been computed with {current}: ask again"
    if other_model:
        why, doing = f"the sentence vectors were made with another model ({old})", "recomputing them"
    else:
        why, doing = "this sample's sentences are not embedded yet", "embedding them"
    if not job.is_active:
        ended = (f"was cancelled by {job.cancelled_by}" if job.cancelled_by
                 else f"failed ({job.error.strip().rstrip('.') or 'no reason recorded'})")
        return f"{why}; job {job.pk}, {doing} with {job_model(job)}, {ended}. An admin can start it again with {command}"
    wait = jobs.job_wait(job)
    if wait is not None and wait.no_worker:
        # The pages' no-worker notice, the same words wherever work waits for a worker.
        return (f"{why}; job {job.pk}, {doing} with {job_model(job)}, is queued. {jobs.no_worker_notice(wait)} An "
                f"admin can also run {command}, which computes them without a worker")
    if outcome.queued_now:
        being = "recomputed" if other_model else "computed"
        return f"{why}; they are being {being} with {current}: job {job.pk} is queued for the worker"
    progress = f"job {job.pk}, {job.status}, {job.done} of {job.total} texts done"
    if other_model:
        return f"{why}; they are being recomputed with {job_model(job)} ({progress})"
    return f"sentence embeddings are still being computed for this sample ({progress})"


def start_embedding(project: Project, *, every_text: bool = False, queue: bool = True,
                    created_by: AbstractBaseUser | None = None) -> tuple[Job | None, bool]:
    """The embed command's job, and whether it is new: it embeds the project's stale texts with the configured
    model; (None, False) when no text is stale.

    ``every_text``: embed every text again, also those already embedded with the
    configured model (after that model's files were replaced under the same
    name). Their vectors count as stale from the moment the job starts running
    (``embedding.EVERY_TEXT``), not when it is queued: until a worker takes it,
    highlighting keeps working with the vectors there are. ``queue``: hand the
    job to the worker (else the caller runs it).
    An embedding job of the project that is queued or running for the configured
    model is answered instead of a new one, unless ``every_text``. Raises
    EmbedRefused while a job for another model, or any job with ``every_text``,
    is queued or running.
    """
    model = embedder.model_name()
    with transaction.atomic():
        _lock_project(project)
        active = embedding_jobs(project).filter(status__in=jobs.ACTIVE).first()
        if active is not None and (every_text or job_model(active) != model):
            raise EmbedRefused(
                f"embedding job {active.pk} of {project.slug} is {active.status} (with {job_model(active)}, "
                f"{active.done} of {active.total} texts done); wait for it to end, or cancel it on the project "
                "page, then run the command again")
        if active is not None:
            return active, False
        if every_text:
            total = Passage.objects.filter(project=project).count() + Sample.objects.filter(project=project).count()
            if not total:
                return None, False
            job = Job.objects.create(project=project, kind=Job.Kind.EMBED, total=total, created_by=created_by,
                                     options={"model": model, EVERY_TEXT: True})
            if queue:
                from annotate.tasks import embed_project_texts

                jobs.queue_job(job, embed_project_texts)  # a refused send fails the job, saying why
            return job, True
        if not stale_count(project):
            return None, False
        if queue:
            return queue_embedding(project, created_by=created_by), True
        return Job.objects.create(project=project, kind=Job.Kind.EMBED, total=stale_count(project),
                                  created_by=created_by, options={"model": model}), True


def cancel_embedding_job(job: Job, user: AbstractBaseUser) -> Job:
    """Mark a queued or running embedding job failed, "Cancelled by <user> at <time>".

    A run of the job that is still going stops after the chunk in hand; the
    texts it embedded keep their vectors, and the embed command (or a similarity
    request, for another model's vectors) embeds the rest. Raises
    jobs.CancelRefused, changing nothing, when the job has already ended.
    """
    return jobs.cancel_job(job, user, kind=Job.Kind.EMBED, finished_words=_embedded_in_words)


def _embedded_in_words(job: Job) -> str:
    return f"it embedded {job.done} of {job.total} texts"
