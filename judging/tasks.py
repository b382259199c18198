"""Celery tasks of the judging app: thin, take a primary key, call one service, acks late (with Redis or RabbitMQ a
killed worker's task is delivered again and the service goes on where it stopped; the embedded filesystem broker
cannot redeliver, so a starting worker resumes the judge runs left queued or running that nobody executes)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.signals import worker_ready

from config.celery import time_limits


# Judge runs (judging.services.runs): a slice of about SLICE_SECONDS, then the service queues the rest; results are
# written a few at a time and a redelivered or resumed task skips what the run already judged.
@shared_task(acks_late=True, **time_limits(3600, 3300))
def execute_judge_run(run_id: int) -> None:
    from judging.services import runs

    runs.execute_run(run_id, max_seconds=runs.SLICE_SECONDS)


@worker_ready.connect
def resume_judge_runs_on_worker_start(sender: Any = None, **kwargs: Any) -> None:
    """kombu's filesystem broker drops a message once a worker takes it, so a run whose worker was killed would
    never be delivered again (tests/e2e/test_judge_worker.py): a starting worker queues every run left queued or
    running that no process is executing and no message waits for (a queued run whose message a worker took and
    died with, too)."""
    from django.conf import settings
    from django.db import connection

    if not settings.CELERY_BROKER_URL.startswith("filesystem://"):
        return  # Redis and RabbitMQ deliver an unacknowledged task again themselves
    from judging.services import runs

    try:
        runs.resume_stale_runs()
    finally:
        connection.close()


# Synthetic sets (helper SYNTHETIC): rewrites are stored one per answer, so a redelivered task asks only for the
# ones still missing; the soft limit leaves the set marked failed with a note, and the page can resume it.
@shared_task(acks_late=True, **time_limits(3600, 3500))
def execute_synthetic_set(set_id: int) -> None:
    from judging.services import synthetic

    synthetic.execute_synthetic_set(set_id)


@worker_ready.connect
def resume_synthetic_sets_on_worker_start(sender: Any = None, **kwargs: Any) -> None:
    """As for judge runs: with the filesystem broker a killed worker's set is not delivered again by itself."""
    from django.conf import settings
    from django.db import connection

    if not settings.CELERY_BROKER_URL.startswith("filesystem://"):
        return
    from judging.services import synthetic

    try:
        synthetic.resume_stale_synthetic_sets()
    finally:
        connection.close()
