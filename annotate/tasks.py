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


# Pairs rounds (annotate.services.pairs): vectors are written a chunk of texts per transaction, and a round
# with its job's "done" in one, so a redelivered task (acks_late) goes on without duplicating anything.
@shared_task(acks_late=True, time_limit=3600, soft_time_limit=3500)
def compute_pair_vectors(job_id: int) -> None:
    from annotate.services.pairs import vectors

    vectors.run_vector_job(job_id)


@shared_task(acks_late=True, time_limit=3600, soft_time_limit=3500)
def create_pair_round(job_id: int) -> None:
    from annotate.services.pairs import rounds

    rounds.run_round_job(job_id)


# Pairs projects: perturb the waiting originals (MASK -> REPLACE -> RANK) in slices; a rerun continues where it stopped.
@shared_task(acks_late=True, time_limit=3600, soft_time_limit=3500)
def perturb_originals(job_id: int) -> None:
    from annotate.services.pairs.perturb import SLICE_SECONDS, run_perturbation_job

    run_perturbation_job(job_id, max_seconds=SLICE_SECONDS)
