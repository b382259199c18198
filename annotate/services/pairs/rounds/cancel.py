"""A round job that no worker runs: how long it has waited, and cancelling it so a new round can be started.

Such a job (no worker started, or its worker died) would block every later round of the project; a project admin
may cancel it while it is queued or running. It then fails with who cancelled it and when, and draws no round even
if a worker picks it up afterwards (``job.run_round_job`` reads its row again, locked, before writing the round).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from django.utils.timesince import timesince

from annotate.models import Job

log = logging.getLogger(__name__)

# A worker picks a queued job up within seconds; queued longer than this, the pages say no worker may be running.
NO_WORKER_AFTER = timedelta(minutes=1)


class CancelRefused(Exception):
    """A round job that has already ended cannot be cancelled; the message says how it ended. Nothing was changed."""


@dataclass(frozen=True)
class RoundJobWait:
    """How long an active round job has waited: queued since it was created, running since its attempt began."""

    status: str
    since: datetime
    seconds: float
    no_worker: bool  # queued for longer than NO_WORKER_AFTER: no worker may be running

    @property
    def duration(self) -> str:
        """The wait in words: seconds under a minute (the job's page polls every second), else minutes, hours..."""
        if self.seconds < 60:
            whole = int(self.seconds)
            return f"{whole} second{'' if whole == 1 else 's'}"
        return timesince(self.since, self.since + timedelta(seconds=self.seconds))


def round_job_wait(job: Job, now: datetime | None = None) -> RoundJobWait | None:
    """How long ``job`` has been queued or running, for the pages; None once it has ended."""
    if not job.is_active:
        return None
    now = now or timezone.now()
    since = job.created_at
    if job.status == Job.Status.RUNNING and job.options.get("started_at"):
        since = datetime.fromisoformat(job.options["started_at"])
    waited = now - since
    return RoundJobWait(status=job.status, since=since, seconds=max(0.0, waited.total_seconds()),
                        no_worker=job.status == Job.Status.QUEUED and waited > NO_WORKER_AFTER)


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
    with transaction.atomic():
        locked = Job.objects.select_for_update().get(pk=job.pk, kind=Job.Kind.PAIR_ROUND)
        if not locked.is_active:
            raise CancelRefused(_ended_in_words(locked))
        now = timezone.now()
        who = user.get_username()
        locked.status = Job.Status.FAILED
        locked.error = f"Cancelled by {who} at {timezone.localtime(now):%Y-%m-%d %H:%M:%S %Z}."
        locked.finished_at = now
        locked.options = {**locked.options, "cancelled_by": who, "cancelled_at": now.isoformat()}
        locked.save(update_fields=["status", "error", "finished_at", "options"])
    log.info("pairs round job %s of project %s cancelled by %s", locked.pk, locked.project_id, who)
    for name in ("status", "error", "finished_at", "options"):
        setattr(job, name, getattr(locked, name))
    return job


def _ended_in_words(job: Job) -> str:
    """Why an ended job cannot be cancelled: how it ended, and that nothing was changed."""
    if job.status == Job.Status.DONE:
        drawn = f"it drew round {job.options['round']}" if job.options.get("round") else "it has finished"
        return f"Job {job.pk} is done ({drawn}); there is nothing to cancel and nothing was changed."
    if job.options.get("cancelled_by"):
        return f"Job {job.pk} was already cancelled ({job.error}); nothing was changed."
    return f"Job {job.pk} has already failed ({job.error or 'no reason recorded'}); nothing was changed."
