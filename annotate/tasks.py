"""Celery tasks: thin, take a primary key, call one service. Each job's service holds the job's lock while it runs,
and a starting worker queues again the jobs a stopped worker left (annotate.services.jobs.recovery)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from annotate.services import embedding, export, results_cache
from config.celery import time_limits


# One slice of the job; the service queues the next slice behind whatever else is waiting.
@shared_task(acks_late=True, **time_limits(3600, 3500))
def embed_project_texts(job_id: int) -> None:
    embedding.run_embedding_job(
        job_id, max_seconds=settings.EMBEDDING_SLICE_SECONDS, max_sentences=settings.EMBEDDING_SLICE_SENTENCES
    )


@shared_task(acks_late=True, **time_limits(3600, 3500))
def run_export(job_id: int) -> None:
    export.run_export_job(job_id)


# The lock on the figure set (settings.FIGURES_REFRESH_LOCK_SECONDS) outlasts the time limit.
@shared_task(acks_late=True, **time_limits(540, 500))
def refresh_figures(figure_set_id: int) -> None:
    results_cache.refresh_figure_set(figure_set_id)


# Pairs rounds (annotate.services.pairs): vectors are written a chunk of texts per transaction, and a round
# with its job's "done" in one, so a redelivered task (acks_late) goes on without duplicating anything.
@shared_task(acks_late=True, **time_limits(3600, 3500))
def compute_pair_vectors(job_id: int) -> None:
    from annotate.services.pairs import vectors

    vectors.run_vector_job(job_id)


@shared_task(acks_late=True, **time_limits(3600, 3500))
def create_pair_round(job_id: int) -> None:
    from annotate.services.pairs import rounds

    rounds.run_round_job(job_id)


# Pairs projects: perturb the waiting originals (MASK -> REPLACE -> RANK) in slices; a rerun continues where it stopped.
@shared_task(acks_late=True, **time_limits(3600, 3500))
def perturb_originals(job_id: int) -> None:
    from annotate.services.pairs.perturb import SLICE_SECONDS, run_perturbation_job

    run_perturbation_job(job_id, max_seconds=SLICE_SECONDS)


@worker_ready.connect
def resume_jobs_on_worker_start(sender: Any = None, **kwargs: Any) -> None:
    """kombu's filesystem broker drops a message once a worker takes it, so a job whose worker was killed would stay
    queued or running for good: a starting worker queues again each one no process executes and no message waits
    for (as judging.tasks does for judge runs and synthetic sets)."""
    from django.db import connection

    if not settings.CELERY_BROKER_URL.startswith("filesystem://"):
        return  # Redis and RabbitMQ deliver an unacknowledged task again themselves
    from annotate.services import jobs

    try:
        jobs.resume_stale_jobs()
    finally:
        connection.close()
