"""Celery tasks: thin, take a primary key, call one service."""

from __future__ import annotations

from celery import shared_task

from annotate.services import embedding


@shared_task(acks_late=True, time_limit=3600, soft_time_limit=3500)
def embed_project_texts(job_id: int) -> None:
    embedding.run_embedding_job(job_id)
