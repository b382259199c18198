"""A real Celery worker, as `make run` starts it, processes the embedding job end to end."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from annotate.models import Job, Passage, Project, Sample
from annotate.services import embedding, export, ingest
from tests.e2e.worker_helpers import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = (ROOT / "tests" / "annotate" / "faithbench_example.json").read_bytes()


def test_worker_splits_and_embeds_imported_texts(worker: subprocess.Popen) -> None:
    project = Project.objects.create(name="Worker", slug="worker")
    report = ingest.import_files(project, [("batch_1.json", EXAMPLE)])
    job = wait_for(report.job, worker)
    assert job.status == Job.Status.DONE, job.error
    assert job.done == job.total == 3  # one passage, two summaries
    passage = Passage.objects.get(project=project)
    assert passage.sentences and len(passage.sentences) == 4
    vectors = passage.sentence_vectors()
    assert vectors is not None and vectors.shape == (4, 384)
    assert all(abs(float((row**2).sum()) - 1.0) < 1e-4 for row in vectors)
    assert Sample.objects.filter(project=project, embeddings__isnull=True).count() == 0

    # Queuing again (as after a restart) does nothing twice: same rows, same vectors.
    before = bytes(passage.embeddings)
    again = wait_for(_requeue(project), worker)
    passage.refresh_from_db()
    assert again.status == Job.Status.DONE and again.total == 0
    assert bytes(passage.embeddings) == before
    assert Passage.objects.filter(project=project).count() == 1


def _requeue(project: Project) -> Job:
    from django.db import transaction

    with transaction.atomic():
        return embedding.queue_embedding(project)


def test_worker_runs_an_export_job_and_a_second_run_rewrites_the_same_file(worker: subprocess.Popen) -> None:
    project = Project.objects.create(name="Worker export", slug="worker-export")
    ingest.import_files(project, [("batch_1.json", EXAMPLE)])
    job = wait_for(export.start_export(project, export.ExportOptions(format="jsonl"), created_by=None), worker)
    assert job.status == Job.Status.DONE, job.error
    assert job.done == job.total == 2 and job.finished_at is not None
    result = Path(job.result_path)
    lines = [json.loads(line) for line in result.read_text(encoding="utf-8").splitlines()]
    assert [line["sample_id"] for line in lines] == [0, 1]  # the file's own ids, with their type
    assert sum(len(line["annotations"]) for line in lines) == 4
    assert {name for line in lines for name in line["worst_label_by_annotator"]} == {"Ana", "Bo"}

    # A redelivered task (the worker died before acknowledging it) writes the same single file again.
    before = result.read_bytes()
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, result_path="")
    export.run_export_job(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.DONE and Path(job.result_path) == result
    assert result.read_bytes() == before
    assert [path.name for path in result.parent.iterdir()] == [result.name]
