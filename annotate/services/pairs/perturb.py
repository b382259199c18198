"""The perturbation job: every original text waiting in a pairs project gets one perturbed text and its items.

``start_perturbation`` checks the model settings (refusing with the sentences
that say what to fill in), records a Job of kind PERTURB and queues the Celery
task once the transaction commits. ``run_perturbation_job`` perturbs the
originals one by one (annotate.perturbation.pipeline): each original's
PerturbedText, its PairItems (in the pool) and its ``perturbed_at`` are written
in one transaction, and the original is claimed with a conditional UPDATE
first, so a job that is restarted, run twice, or run beside another never
makes a second perturbed text of an original.

An original with nothing to replace (all of it inside the kept context
sentences, or only stop words after them) is marked done with no perturbed
text, and named in the job's summary.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from annotate.models import Job, PairItem, PairOriginal, PerturbedText, Project
from annotate.perturbation.models import PerturbationModelError, PerturbationModels, load_models
from annotate.services import jobs
from annotate.services.pairs.config import get_config, missing_model_settings, model_paths

if TYPE_CHECKING:  # the pipeline imports torch: only the job needs it, not the pages that import this module
    from annotate.perturbation.pipeline import PerturbationParams, PerturbationResult

log = logging.getLogger(__name__)
SKIPPED_LISTED = 50  # originals named in the job summary when nothing could be replaced in them
SLICE_SECONDS = 600  # the most one task perturbs before it queues the rest


class PerturbationError(ValueError):
    """Perturbation cannot start; the message says why and what to change."""


class NothingToPerturb(PerturbationError):
    pass


def pending_originals(project: Project) -> QuerySet[PairOriginal]:
    """Originals without a perturbed text: not done by the pipeline, and not imported with their pairs."""
    return PairOriginal.objects.filter(project=project, perturbed_at__isnull=True, perturbed_texts__isnull=True)


def text_seed(job_seed: int, external_id: str) -> int:
    """Each original's own seed: the same job seed perturbs an original the same way whatever else is queued."""
    digest = hashlib.sha256(f"{job_seed}:{external_id}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


def active_perturbation(project: Project) -> Job | None:
    """The project's perturbation job that is queued or running (the newest); None if none."""
    return Job.objects.filter(project=project, kind=Job.Kind.PERTURB, status__in=jobs.ACTIVE).first()


def start_perturbation(project: Project, user: Any, *, seed: int | None = None, queue: bool = True) -> Job:
    """Create the PERTURB job over the waiting originals and queue it (``queue=False``: the caller runs it)."""
    if project.kind != Project.Kind.PAIRS:
        raise PerturbationError(f"project {project.slug!r} is not a pairs project")
    missing = missing_model_settings(project)
    if missing:
        raise PerturbationError(" ".join(missing))
    active = active_perturbation(project)
    if active is not None:
        raise PerturbationError(
            f"a perturbation job is already {active.get_status_display().lower()} (job {active.pk}: "
            f"{active.done} of {active.total} texts done); wait for it to finish, or cancel it (the project page's "
            "Perturbation section, or the API) if no worker runs it"
        )
    waiting = pending_originals(project)
    total = waiting.count()
    if total == 0:
        raise NothingToPerturb(f"no original text of project {project.slug!r} is waiting to be perturbed")
    last = waiting.order_by("-pk").values_list("pk", flat=True).first()
    job = Job.objects.create(
        project=project, kind=Job.Kind.PERTURB, total=total, created_by=user if getattr(user, "pk", None) else None,
        options={"seed": secrets.randbelow(2**31) if seed is None else int(seed), "up_to_original": last},
    )
    if queue:
        from annotate.tasks import perturb_originals

        jobs.queue_job(job, perturb_originals)  # a refused send fails the job, saying why (job.error)
    return job


def _parameters(models: PerturbationModels, params: PerturbationParams, result: PerturbationResult,
                job: Job) -> dict[str, Any]:
    return {
        **models.describe(),
        **params.as_dict(),
        "seed": result.seed,
        "candidate_perplexities": [round(value, 6) for value in result.perplexities],
        "chosen_candidate": result.chosen,
        "maskable_units": result.maskable_units,
        "job": job.pk,
    }


def save_perturbation(job: Job, original: PairOriginal, result: PerturbationResult, models: PerturbationModels,
                      params: PerturbationParams) -> bool:
    """Write one original's perturbed text and items; False when another run got to this original first."""
    with transaction.atomic():
        claimed = PairOriginal.objects.filter(pk=original.pk, perturbed_at__isnull=True).update(
            perturbed_at=timezone.now()
        )
        if not claimed:
            return False
        if result.spans:
            perturbed = PerturbedText.objects.create(
                project=job.project, original=original, text=result.text, source=PerturbedText.Source.PIPELINE,
                parameters=_parameters(models, params, result, job), seed=result.seed, perplexity=result.perplexity,
            )
            PairItem.objects.bulk_create(
                PairItem(
                    project=job.project, perturbed=perturbed, position=position,
                    metadata={"entity": span.entity} if span.entity else {},
                    original_start=span.original_start, original_end=span.original_end,
                    original_words=span.original_words, perturbed_start=span.perturbed_start,
                    perturbed_end=span.perturbed_end, perturbed_words=span.perturbed_words,
                    state=PairItem.State.POOL,
                )
                for position, span in enumerate(result.spans)
            )
        Job.objects.filter(pk=job.pk).update(done=F("done") + 1)
    return True


def _fail(job: Job, message: str) -> Job:
    """Mark the job failed (tried again while the database is locked), unless an admin cancelled it meanwhile."""
    jobs.mark_failed(job.pk, message, only_if_active=True)
    job.refresh_from_db()
    return job


def _active(job_id: int) -> QuerySet[Job]:
    """The job's row while it is queued or running: a write through it leaves a cancelled job as it is."""
    return Job.objects.filter(pk=job_id, status__in=jobs.ACTIVE)


def cancel_perturbation_job(job: Job, user: Any) -> Job:
    """Mark a queued or running perturbation job failed, "Cancelled by <user> at <time>", so a new one can start.

    A job no worker runs (none started, or its worker died and nothing resumed
    it) otherwise refuses every new perturbation of the project. A run of the job
    that is still going stops before its next original; the originals it has
    perturbed keep their texts and items, and a new job perturbs the rest.
    Raises jobs.CancelRefused, changing nothing, when the job has already ended.
    """
    return jobs.cancel_job(job, user, kind=Job.Kind.PERTURB, finished_words=_perturbed_in_words)


def _perturbed_in_words(job: Job) -> str:
    perturbed = job.options.get("perturbed")
    return "it has finished" if perturbed is None else f"it perturbed {perturbed} of its {job.total} originals"


def run_perturbation_job(
    job_id: int, *, progress: Callable[[Job], None] | None = None, max_seconds: float | None = None,
    lock_held: bool = False,
) -> Job:
    """Perturb the job's waiting originals; safe to run again (it continues where it stopped).

    With ``max_seconds``, stops after the original that passes it and queues a new task for the rest (the job
    stays running), so a long job does not hold the worker past its time limit or ahead of other jobs. One
    process at a time per job (its lock, held by the worker's task and the `perturb_pairs` command alike); a job
    cancelled by an admin stops before its next original and keeps its cancel's status and message.
    ``lock_held``: the caller took the job's lock before the job was committed and holds it until this returns
    (the `perturb_pairs` command, through jobs.start_held; it gives no ``max_seconds``, so no next slice is
    queued under its lock).
    """
    with nullcontext(True) if lock_held else jobs.job_lock(job_id) as held:
        job = Job.objects.select_related("project").get(pk=job_id)
        if not held or job.status in (Job.Status.DONE, Job.Status.FAILED):
            return job
        if not _active(job.pk).update(status=Job.Status.RUNNING):
            job.refresh_from_db()  # cancelled between the read above and now
            return job
        more = _perturb_waiting(job, progress, max_seconds)
    if more:
        from annotate.tasks import perturb_originals

        # The rest goes in a new task, behind whatever else is queued; it carries on where this one stopped. One
        # the broker refuses leaves the job running, for the next worker start to queue again.
        jobs.queue_job(job, perturb_originals, next_slice=True)
    elif job.status == Job.Status.DONE:
        jobs.forget_job_lock(job.pk)
    job.refresh_from_db()
    return job


def _perturb_waiting(job: Job, progress: Callable[[Job], None] | None, max_seconds: float | None) -> bool:
    """Perturb the job's waiting originals and finish the job; True when time ran out with originals left."""
    project = job.project
    config = get_config(project)
    missing = missing_model_settings(project)
    if missing:
        _fail(job, " ".join(missing))
        return False
    from annotate.perturbation.pipeline import PerturbationParams, perturb_text

    paths = model_paths(config)
    try:
        models = load_models(paths.masked_lm.path, paths.causal_lm.path, paths.spacy_pipeline.path)
        params = PerturbationParams(
            context_sentences=config.context_sentences, mask_ratio=config.mask_ratio, top_k=config.top_k,
            temperature=config.temperature, candidates=config.candidates,
        ).check()
    except (PerturbationModelError, ValueError) as error:
        _fail(job, str(error))
        return False

    job_seed = int(job.options.get("seed", 0))
    waiting = pending_originals(project).order_by("pk")
    if job.options.get("up_to_original") is not None:
        waiting = waiting.filter(pk__lte=job.options["up_to_original"])
    # Ids first: the loop writes to the table it would otherwise be reading from.
    waiting_ids = list(waiting.values_list("pk", flat=True))
    started = time.monotonic()
    for position, original_id in enumerate(waiting_ids):
        if max_seconds is not None and position > 0 and time.monotonic() - started > max_seconds:
            return True
        # An admin's cancel, or a Ctrl-C in the perturb_pairs command (jobs.cancel_if_interrupted).
        if jobs.cancel_if_interrupted(job.pk) or not _active(job.pk).exists():
            log.info("perturbation job %s was cancelled: it stops before original %s", job.pk, original_id)
            return False
        original = PairOriginal.objects.filter(pk=original_id, perturbed_at__isnull=True).first()
        if original is None:  # another run got to it first
            continue
        try:
            result = perturb_text(original.text, models, params, text_seed(job_seed, original.external_id))
        except Exception as error:
            _fail(job, f"original {original.external_id!r}: {error}")
            raise
        save_perturbation(job, original, result, models, params)
        if progress is not None:
            job.refresh_from_db(fields=["done", "total"])
            progress(job)
    _finish(job, models, params)
    return False


def _finish(job: Job, models: PerturbationModels, params: PerturbationParams) -> None:
    """Mark the job done with its summary, unless it was cancelled meanwhile."""
    project = job.project
    # The summary is read back from the rows, so a job that was interrupted and run again still adds up.
    made = PerturbedText.objects.filter(project=project, source=PerturbedText.Source.PIPELINE, parameters__job=job.pk)
    skipped = PairOriginal.objects.filter(project=project, perturbed_at__isnull=False, perturbed_texts__isnull=True)
    if job.options.get("up_to_original") is not None:
        skipped = skipped.filter(pk__lte=job.options["up_to_original"])
    skipped_ids = list(skipped.order_by("pk").values_list("external_id", flat=True)[:SKIPPED_LISTED])
    summary = {
        **job.options,
        "perturbed": made.count(),
        "items": PairItem.objects.filter(perturbed__in=made).count(),
        "skipped": skipped_ids,
        "skipped_count": skipped.count(),
        "models": models.describe(),
        "parameters": params.as_dict(),  # shown with the finished job on the project page
    }
    if not _active(job.pk).update(status=Job.Status.DONE, done=F("total"), options=summary,
                                  finished_at=timezone.now()):
        return
    job.status = Job.Status.DONE
    log.info("perturbation job %s: %s texts perturbed, %s items, %s without a word to replace",
             job.pk, summary["perturbed"], summary["items"], summary["skipped_count"])
