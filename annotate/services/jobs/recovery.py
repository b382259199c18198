"""A starting worker goes on with the jobs a stopped worker left queued or running (the embedded broker only).

kombu's filesystem transport removes a message from its queue folder when a
worker takes it, so acks_late cannot deliver a killed worker's task again
(SIGKILL, power loss, or `make run`'s Ctrl-C once its 7 s grace runs out): the
job would stay "running" at, say, 97 of 1236 for good. A job that no process
executes (its lock is free) and no message waits for is orphaned
(``locks.orphaned_ids``); the worker that starts queues it again, since every
job kind's work goes on without doing anything twice:

- embedding: texts already embedded are skipped, each counted done once;
- export: the file is written again from scratch, the partial one removed first;
- perturbation: originals already perturbed keep their text and items, the rest are done;
- span vectors: items that have their vector are skipped;
- pair round: the round it was started for is drawn with its seed, or none; never a second one.

A job of a kind not listed here, or one that cannot be queued again (the broker
refuses it), is marked failed with a message saying the worker stopped and what
to do. A job queued again counts it in its options (``resumed``, and when last:
``resumed_at``), as a judge run counts its resumptions: its line on the project
page and the jobs API say how often it was resumed.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task
from django.db import transaction
from django.utils import timezone

from annotate.models import Job
from annotate.services.jobs.failure import ACTIVE, mark_failed
from annotate.services.jobs.locks import is_job_executing, job_lock, orphaned_ids
from annotate.services.jobs.sending import send_job

log = logging.getLogger(__name__)

# Each job kind's Celery task in annotate.tasks, the one that resumes it (see the module's docstring for how).
RESUMING_TASKS: dict[str, str] = {
    Job.Kind.EMBED: "embed_project_texts",
    Job.Kind.EXPORT: "run_export",
    Job.Kind.PERTURB: "perturb_originals",
    Job.Kind.PAIR_VECTORS: "compute_pair_vectors",
    Job.Kind.PAIR_ROUND: "create_pair_round",
}


def resuming_task(kind: str) -> Task | None:
    """The task that goes on with a job of ``kind``; None for a kind that cannot go on by itself."""
    from annotate import tasks

    name = RESUMING_TASKS.get(kind)
    return getattr(tasks, name) if name else None


def stopped_message(job: Job) -> str:
    """Why a job that cannot go on by itself failed, and what to do."""
    return (f"The worker stopped while job {job.pk} ({job.get_kind_display().lower()}) was {job.status}, and this "
            "kind of job does not go on by itself. Whatever it had done is kept; start it again from the project "
            "page.")


def resume_stale_jobs() -> list[int]:
    """Queue again every queued or running job that no process executes and no message waits for; the ids queued.

    Jobs that cannot be queued again are marked failed instead (``stopped_message``,
    or the broker's error), and are not in the list. Safe to call from several
    workers starting at once: see ``locks.orphaned_ids``.
    """
    by_kind: dict[str, list[int]] = {}
    for job_id, kind in Job.objects.filter(status__in=ACTIVE).order_by("pk").values_list("pk", "kind"):
        by_kind.setdefault(kind, []).append(job_id)
    resumed: list[int] = []
    for kind, ids in by_kind.items():
        task = resuming_task(kind)
        if task is None:
            for job_id in [number for number in ids if not is_job_executing(number)]:
                _fail_stopped(job_id)
            continue
        resumed += [job_id for job_id in orphaned_ids(ids, task, is_job_executing) if _resume(job_id, task)]
    if resumed:
        log.info("jobs queued again after a worker start: %s", ", ".join(map(str, sorted(resumed))))
    return sorted(resumed)


def _fail_stopped(job_id: int) -> None:
    job = Job.objects.filter(pk=job_id, status__in=ACTIVE).first()
    if job is not None:
        mark_failed(job.pk, stopped_message(job), only_if_active=True)
        log.warning("job %s (%s) failed: its worker stopped and it cannot go on by itself", job.pk, job.kind)


def _resume(job_id: int, task: Task) -> bool:
    """Queue one orphaned job again (an export first drops its partial file); False if it ended meanwhile or
    could not be queued (then it is marked failed)."""
    job = Job.objects.filter(pk=job_id, status__in=ACTIVE).first()
    if job is None:
        return False
    if job.kind == Job.Kind.EXPORT:
        from annotate.services.export.jobs import restart_export

        # Under the job's lock: a spare message another worker runs meanwhile cannot write beside the removal.
        with job_lock(job.pk) as free:
            if not free:
                return False
            restart_export(job)
    before = _count_resumption(job)
    if before is None:
        return False  # ended meanwhile
    if send_job(job, task, after_stop=True):
        return True
    # Not queued after all (the job is failed saying so): it was not resumed.
    Job.objects.filter(pk=job.pk).update(options=before)
    return False


def _count_resumption(job: Job) -> dict[str, Any] | None:
    """Count one more resumption in the job's options (``resumed``, ``resumed_at``); its options before, or None
    when it has ended meanwhile (then nothing is written).

    Written and committed before the task is sent, so the execution it starts reads the count and keeps it in
    whatever options it writes itself. The row is locked meanwhile, as a cancel locks it.
    """
    with transaction.atomic():
        locked = Job.objects.select_for_update().filter(pk=job.pk, status__in=ACTIVE).first()
        if locked is None:
            return None
        before = dict(locked.options)
        locked.options = {**before, "resumed": locked.resumed + 1, "resumed_at": timezone.now().isoformat()}
        locked.save(update_fields=["options"])
    job.options = locked.options
    return before
