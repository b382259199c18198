"""A job that no worker runs: how long it has waited, and cancelling it so that new work can start.

A job stuck in "queued" (no worker started, or the message was lost) or
"running" (its worker died and nothing resumed it) blocks what it guards: a
round job every later round, a perturbation job every new perturbation. A
project admin may cancel it; it then fails with who cancelled it and when, and
the job's own service leaves it so even if a worker picks it up afterwards
(each writes its status only while the job is still queued or running).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from html import unescape
from typing import Any, Protocol

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.html import strip_tags
from django.utils.timesince import timesince

from annotate.models import Job
from annotate.services import interrupt
from annotate.services.interrupt import command_canceller

log = logging.getLogger(__name__)

# A worker picks a queued job up within seconds; queued longer than this, the pages say no worker may be running.
NO_WORKER_AFTER = timedelta(minutes=1)


class CancelRefused(Exception):
    """A job that has already ended cannot be cancelled; the message says how it ended. Nothing was changed."""


@dataclass(frozen=True)
class JobWait:
    """How long an active job has waited: queued since it was (last) queued, running since its attempt began."""

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


class Waiting(Protocol):
    """Background work a page polls: annotate's jobs, judging's runs and synthetic sets (each a Progress row)."""

    status: str
    created_at: datetime

    @property
    def is_active(self) -> bool: ...


def job_wait(job: Waiting, now: datetime | None = None) -> JobWait | None:
    """How long ``job`` has been queued or running, for the pages; None once it has ended.

    Queued counts from when it was last queued where the work records that
    (``queued_at`` of a synthetic set, which Resume queues again long after its
    creation), else from its creation. Running counts from when its attempt
    began where the work records it (``options["started_at"]`` of a round job,
    ``started_at`` of a judge run), else as queued. Any Progress row with
    ``created_at`` will do: the judging pages show the same no-worker notice for
    runs and synthetic sets.
    """
    if not job.is_active:
        return None
    now = now or timezone.now()
    since = getattr(job, "queued_at", None) or job.created_at
    started = getattr(job, "started_at", None) or (getattr(job, "options", None) or {}).get("started_at")
    if job.status == Job.Status.RUNNING and started:
        since = started if isinstance(started, datetime) else datetime.fromisoformat(started)
    waited = now - since
    return JobWait(status=job.status, since=since, seconds=max(0.0, waited.total_seconds()),
                   no_worker=job.status == Job.Status.QUEUED and waited > NO_WORKER_AFTER)


def no_worker_notice(wait: JobWait, *, cancellable: bool = False) -> str:
    """The pages' notice for work no worker has taken (templates/annotate/_no_worker.html: for how long, the two
    causes and what to do for each) as plain text, for a message that is no page: one wording for both."""
    html = render_to_string("annotate/_no_worker.html", {"wait": wait, "cancellable": cancellable})
    return " ".join(unescape(strip_tags(html)).split())


def cancel_job(job: Job, user: AbstractBaseUser, *, kind: str, finished_words: Callable[[Job], str]) -> Job:
    """Mark a queued or running job of ``kind`` failed, "Cancelled by <user> at <time>"; returns ``job``, updated.

    The job's row is locked while it is read and written, so a cancel that
    comes while the job's service writes its outcome in a transaction waits for
    it and is then refused. Raises CancelRefused, changing nothing, when the job
    has already ended (``finished_words`` says what a done job did). Who and
    when are also kept in the job's options (``cancelled_by``, ``cancelled_at``).
    """
    return _cancel_job(job, user.get_username(), kind=kind, finished_words=finished_words)


def cancel_job_from_command(job: Job, command: str) -> Job:
    """Cancel a job that a command executing it in the foreground was told to stop (Ctrl-C), as :func:`cancel_job`
    does: "Cancelled by command (Ctrl-C in manage.py <command>) at <time>.", that canceller kept in the options'
    ``cancelled_by`` (a command has no user). Refusals: those of cancel_job."""
    return _cancel_job(job, command_canceller(command), kind=job.kind, finished_words=lambda _: "it ended")


def cancel_if_interrupted(job_id: int) -> bool:
    """At a point where the job's service checks for a cancel: when a Ctrl-C asked the command executing the job
    here to stop (annotate.services.interrupt), cancel the job in that command's name, so that the service stops
    there as after an admin's Cancel; whether it was cancelled now (False too for a job that had ended)."""
    if not interrupt.requested():
        return False
    try:
        cancel_job_from_command(Job.objects.get(pk=job_id), interrupt.command_name())
    except CancelRefused:
        return False  # it ended meanwhile (done, or cancelled from its page): stopping is all that is left
    return True


def _cancel_job(job: Job, who: str, *, kind: str, finished_words: Callable[[Job], str]) -> Job:
    with transaction.atomic():
        locked = Job.objects.select_for_update().get(pk=job.pk, kind=kind)
        if not locked.is_active:
            raise CancelRefused(ended_in_words(locked, finished_words))
        now = timezone.now()
        locked.status = Job.Status.FAILED
        locked.error = cancelled_message(who, now)
        locked.finished_at = now
        locked.options = {**locked.options, "cancelled_by": who, "cancelled_at": now.isoformat()}
        locked.save(update_fields=["status", "error", "finished_at", "options"])
    log.info("%s job %s of project %s cancelled by %s", kind, locked.pk, locked.project_id, who)
    for name in ("status", "error", "finished_at", "options"):
        setattr(job, name, getattr(locked, name))
    return job


def cancelled_message(who: str, now: datetime) -> str:
    """What a cancelled job's (or judge run's) ``error`` says: "Cancelled by adam at 2025-06-01 22:35:08 UTC."."""
    return f"Cancelled by {who} at {timezone.localtime(now):%Y-%m-%d %H:%M:%S %Z}."


def ended_in_words(job: Any, finished_words: Callable[[Any], str], *, noun: str = "Job",
                   reason: str | None = None) -> str:
    """Why an ended job cannot be cancelled: how it ended, and that nothing was changed.

    Any Progress row with ``error``, ``cancelled_by`` and ``cancelled_at`` will do (a judge run or a synthetic set
    too, ``noun`` "Run" or "Set", whose ``cancelled`` and ``canceller_name`` hold for a canceller deleted since).
    ``reason``: what to quote for a failed or cancelled one where its ``error`` holds more than that (a
    synthetic set's notes on the outputs it skipped); its ``error`` by default."""
    if job.status == Job.Status.DONE:
        return f"{noun} {job.pk} is done ({finished_words(job)}); there is nothing to cancel and nothing was changed."
    if getattr(job, "cancelled", None) or job.cancelled_by:
        return f"{noun} {job.pk} was already cancelled {_cancel_in_words(job, reason)}; nothing was changed."
    said = _without_full_stop((job.error if reason is None else reason) or "no reason recorded")
    return f"{noun} {job.pk} has already failed ({said}); nothing was changed."


def _cancel_in_words(job: Any, reason: str | None = None) -> str:
    """Who cancelled ``job`` and when, in the current time zone ("by adam at 2025-06-01 22:35:08 UTC").

    Read from the job's options rather than quoted from ``error``, whose own
    full stop would end up inside the sentence; an unreadable time falls back to
    that message (or ``reason``), in brackets.
    """
    if job.cancelled_at is None:
        return f"({_without_full_stop(job.error if reason is None else reason)})"
    who = getattr(job, "canceller_name", None) or job.cancelled_by
    return f"by {who} at {timezone.localtime(job.cancelled_at):%Y-%m-%d %H:%M:%S %Z}"


def _without_full_stop(message: str) -> str:
    """A stored message quoted inside a sentence: without its closing full stop, so none is doubled after it."""
    return message.strip().rstrip(".")
