"""A round job that no worker runs: how long it has waited, and cancelling it so a new round can be started.

Such a job (no worker started, or its worker died) would block every later round of the project; a project admin
may cancel it while it is queued or running. It then fails with who cancelled it and when, and draws no round even
if a worker picks it up afterwards (``job.run_round_job`` reads its row again, locked, before writing the round).
The wait and the cancel are every job's (annotate.services.jobs.cancel); this module words them for round jobs.
"""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser

from annotate.models import Job
from annotate.services.jobs.cancel import NO_WORKER_AFTER, CancelRefused, cancel_job, job_wait
from annotate.services.jobs.cancel import JobWait as RoundJobWait

__all__ = ["NO_WORKER_AFTER", "CancelRefused", "RoundJobWait", "cancel_round_job", "round_job_wait"]


def round_job_wait(job: Job, now: datetime | None = None) -> RoundJobWait | None:
    """How long ``job`` has been queued or running, for the pages; None once it has ended."""
    return job_wait(job, now)


def cancel_round_job(job: Job, user: AbstractBaseUser) -> Job:
    """Mark a queued or running round job failed, "Cancelled by <user> at <time>", so a new round can be started.

    A job stuck in "queued" (no worker ran it) or "running" (its worker died)
    otherwise blocks every later round of the project (``round_job_busy``). The
    job draws no round afterwards: ``run_round_job`` checks the job's row,
    locked, in the transaction that would write the round. The job's row is
    locked here too, so a cancel that comes while the round is being written
    waits for it and is then refused. Raises CancelRefused, changing nothing,
    when the job has already ended. Who and when are also kept in the job's
    options (``cancelled_by``, ``cancelled_at``). Returns ``job``, updated.
    """
    return cancel_job(job, user, kind=Job.Kind.PAIR_ROUND, finished_words=_drawn_in_words)


def _drawn_in_words(job: Job) -> str:
    return f"it drew round {job.options['round']}" if job.options.get("round") else "it has finished"
