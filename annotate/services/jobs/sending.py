"""Sending a job's task to the worker, after the commit that makes the job's row visible to it.

A job row saved and its task never sent stayed "queued" for good: kombu's
filesystem transport raises FileNotFoundError when its queue folder is gone,
Redis or RabbitMQ a connection error when the server is down, and the error
used to come out of the request as a 500 with the row already committed. Here
the job is marked failed with the error and what to check, and the caller
(a page, the API) reads it from the job.

Before a process's first send, and again after a refused one, the embedded
broker is repaired (config.broker: missing folders made, an exchange file kombu
cannot read removed), and a refused send is tried once more after a repair that
did something. The next slice of a job already running (``next_slice``) is not
failed when it cannot be sent: the job stays running, saying so, and the next
worker start queues it again (jobs.recovery), as after a SIGKILL.
"""

from __future__ import annotations

import logging
from pathlib import Path

from celery import Task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotate.models import Job
from annotate.services.jobs.failure import ACTIVE, mark_failed, retry_when_locked
from config import broker

log = logging.getLogger(__name__)


# Whether this process has repaired the embedded broker before its first send (config.broker.repair).
_repaired_before_first_send = False


def queue_job(job: Job, task: Task, *, next_slice: bool = False, countdown: float | None = None) -> None:
    """Send ``task`` for ``job`` once the surrounding transaction commits (at once outside one).

    When the send fails, ``job`` (this object too, so the caller that holds it
    can tell) is marked failed with ``not_queued_message``; see ``send_job``.
    ``next_slice`` and ``countdown``: see ``send_job``.
    """
    transaction.on_commit(lambda: send_job(job, task, next_slice=next_slice, countdown=countdown))


def _send(task: Task, job: Job, countdown: float | None) -> None:
    if countdown:
        task.apply_async((job.pk,), countdown=countdown)
    else:
        task.delay(job.pk)


def send_job(job: Job, task: Task, *, after_stop: bool = False, next_slice: bool = False,
             countdown: float | None = None) -> bool:
    """Send ``task`` for ``job`` now; False, with the job marked failed saying why, when the broker refuses it.

    ``after_stop``: the job is being queued again because its worker stopped
    (``recovery``), which the failure's message then says. ``next_slice``: the
    job is running and this is its next slice; a refusal leaves it running
    (``resumable_message`` in its error) for the next worker start to queue
    again. ``countdown``: seconds before a worker may run the task.
    """
    global _repaired_before_first_send
    repaired: list[str] = []
    if not _repaired_before_first_send:
        _repaired_before_first_send = True
        repaired += _repair()
    try:
        try:
            _send(task, job, countdown)
        except Exception:  # noqa: BLE001 - tried once more below when a repair did something
            again = _repair()
            if not again:
                raise
            repaired += again
            _send(task, job, countdown)
    except Exception as error:  # noqa: BLE001 - any broker's error: a missing folder, a server down, a bad URL
        log.exception("could not queue %s for job %s", task.name, job.pk)
        if next_slice:
            message = resumable_message(job, error, repaired)
            retry_when_locked(lambda: Job.objects.filter(pk=job.pk, status__in=ACTIVE).update(error=message))
            job.error = message
            return False
        message = not_queued_message(job, error, after_stop=after_stop, repaired=repaired)
        mark_failed(job.pk, message)
        job.status, job.error, job.finished_at = Job.Status.FAILED, message, timezone.now()
        return False
    return True


def _repair() -> list[str]:
    """config.broker.repair with the settings' folders; what it did (nothing when it failed itself)."""
    try:
        return broker.repair_configured()
    except Exception:  # noqa: BLE001 - the send's own error says more
        log.exception("could not repair the embedded broker")
        return []


def _cause(error: BaseException) -> tuple[BaseException, str | None]:
    """The error under kombu's wrapping (a ChannelError raised from an OSError), and the file or folder it names."""
    seen = error
    while seen.__cause__ is not None and not getattr(seen, "filename", None):
        seen = seen.__cause__
    return seen, getattr(seen, "filename", None)


def _error_words(error: BaseException) -> str:
    words = f"{type(error).__name__}: {error}"
    cause, _ = _cause(error)
    if cause is not error:
        words += f" ({type(cause).__name__}: {cause})"
    return words


def _check(error: BaseException, repaired: list[str]) -> str:
    """What to check, naming the file or folder the error names, and what the repair did."""
    options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", None) or {}
    if settings.CELERY_BROKER_URL.startswith("filesystem://") and options.get("data_folder_out"):
        _, filename = _cause(error)
        where = filename or options["data_folder_out"]
        check = (f"the embedded broker could not use {where}: it must be a folder (or a file in one) this process "
                 f"can write to, on a disk with free space (broker folders under {Path(options['data_folder_out']).parent})")
    else:
        check = "the broker named by CELERY_BROKER_URL must be reachable from the web server and the worker"
    done = "; ".join(repaired) if repaired else "a repair of the broker's folders found nothing to do"
    return f"{check}; {done}"


def not_queued_message(job: Job, error: BaseException, *, after_stop: bool = False,
                       repaired: list[str] | None = None) -> str:
    """What the page shows for a job whose task could not be sent: the error, what to check, what to do next."""
    what = f"Job {job.pk} ({job.get_kind_display().lower()})"
    if after_stop:
        what = f"The worker stopped while {what[0].lower()}{what[1:]} was {job.status}, and the job"
    return (f"{what} could not be queued for the worker: {_error_words(error)}. It stopped there, "
            f"keeping whatever it had already done; {_check(error, repaired or [])}. Then start it again.")


def resumable_message(job: Job, error: BaseException, repaired: list[str] | None = None) -> str:
    """A running job whose next slice could not be sent: it stays running, and the next worker start goes on."""
    return (f"The next part of job {job.pk} ({job.get_kind_display().lower()}) could not be queued for the worker: "
            f"{_error_words(error)}. The job keeps what it has done and stays {job.status}; "
            f"{_check(error, repaired or [])}. The next worker start (restart `make run` or the worker) goes on "
            "with it.")
