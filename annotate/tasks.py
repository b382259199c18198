"""Celery tasks: thin, take a primary key, call one service."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from annotate.services import embedding, export, results_cache


# One slice of the job; the service queues the next slice behind whatever else is waiting.
@shared_task(acks_late=True, time_limit=3600, soft_time_limit=3500)
def embed_project_texts(job_id: int) -> None:
    embedding.run_embedding_job(
        job_id, max_seconds=settings.EMBEDDING_SLICE_SECONDS, max_sentences=settings.EMBEDDING_SLICE_SENTENCES
    )


@shared_task(acks_late=True, time_limit=3600, soft_time_limit=3500)
def run_export(job_id: int) -> None:
    export.run_export_job(job_id)


# The lock on the figure set (settings.FIGURES_REFRESH_LOCK_SECONDS) outlasts the time limit.
@shared_task(acks_late=True, time_limit=540, soft_time_limit=500)
def refresh_figures(figure_set_id: int) -> None:
    results_cache.refresh_figure_set(figure_set_id)
