"""Sending a job's task to the worker, after the commit that makes the job's row visible to it.

A job row saved and its task never sent stayed "queued" for good: kombu's
filesystem transport raises FileNotFoundError when its queue folder is gone,
Redis or RabbitMQ a connection error when the server is down, and the error
used to come out of the request as a 500 with the row already committed. Here
the job is marked failed with the error and what to check, and the caller
(a page, the API, the next slice of a job) reads it from the job.
"""

from __future__ import annotations

import logging

from celery import Task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotate.models import Job
from annotate.services.jobs.failure import mark_failed

log = logging.getLogger(__name__)


def queue_job(job: Job, task: Task) -> None:
    """Send ``task`` for ``job`` once the surrounding transaction commits (at once outside one).

    When the send fails, ``job`` (this object too, so the caller that holds it
    can tell) is marked failed with ``not_queued_message``; see ``send_job``.
    """
    transaction.on_commit(lambda: send_job(job, task))


def send_job(job: Job, task: Task, *, after_stop: bool = False) -> bool:
    """Send ``task`` for ``job`` now; False, with the job marked failed saying why, when the broker refuses it.

    ``after_stop``: the job is being queued again because its worker stopped
    (``recovery``), which the failure's message then says.
    """
    try:
        task.delay(job.pk)
    except Exception as error:  # noqa: BLE001 - any broker's error: a missing folder, a server down, a bad URL
        log.exception("could not queue %s for job %s", task.name, job.pk)
        message = not_queued_message(job, error, after_stop=after_stop)
        mark_failed(job.pk, message)
        job.status, job.error, job.finished_at = Job.Status.FAILED, message, timezone.now()
        return False
    return True


def not_queued_message(job: Job, error: BaseException, *, after_stop: bool = False) -> str:
    """What the page shows for a job whose task could not be sent: the error, what to check, what to do next."""
    options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", None) or {}
    if settings.CELERY_BROKER_URL.startswith("filesystem://") and options.get("data_folder_out"):
        check = (f"the embedded broker's queue folder {options['data_folder_out']} must exist (restarting `make run` "
                 "or the worker makes it again)")
    else:
        check = "the broker named by CELERY_BROKER_URL must be reachable from the web server and the worker"
    what = f"Job {job.pk} ({job.get_kind_display().lower()})"
    if after_stop:
        what = f"The worker stopped while {what[0].lower()}{what[1:]} was {job.status}, and the job"
    return (f"{what} could not be queued for the worker: {type(error).__name__}: {error}. It stopped there, "
            f"keeping whatever it had already done; {check}. Then start it again.")
