"""A worker killed mid-job, then a worker start: each annotate job is finished once, or failed saying what to do.

kombu's filesystem broker drops a message once a worker takes it, so before this every job but judge runs and
synthetic sets stayed "running" for good after a kill -9 (an embedding job at 97 of 1236, an export at 0 of 630 with
a partial file on disk). Real kombu messages in the test's own queue folder stand for the broker
(tests/annotate/job_queue.py); the pairs jobs are in tests/pairs/test_pair_jobs_resumed.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError
from django.db.models.query import QuerySet
from tenacity import wait_none

from annotate import embedder, tasks
from annotate.models import Batch, Job, Passage, Project, Sample
from annotate.services import embedding, export, jobs
from annotate.services.export import jobs as export_jobs
from annotate.services.jobs import failure, recovery
from tests.annotate.job_queue import (
    WorkerKilled,
    deliver_all,
    finished_after_worker_start,
    job_queue_fixture,  # noqa: F401  (the queue fixture)
    kill_on_call,
    queued_again_at_worker_start,
    run_until_killed,
    waiting,
    worker_start,
)

pytestmark = pytest.mark.django_db

SUMMARIES = [f"Summary {number} says the bridge reopened. It cost {number} million euros." for number in range(6)]


def texts_project() -> Project:
    """A passage and six summaries, embedded a text at a time (see small_groups)."""
    project = Project.objects.create(name="Resumed", slug="resumed")
    batch = Batch.objects.create(project=project, name="b1")
    passage = Passage.objects.create(project=project, external_id="p1", text="The bridge reopened. It is old.")
    for position, summary in enumerate(SUMMARIES):
        Sample.objects.create(project=project, passage=passage, batch=batch, position=position, summary=summary)
    return project


@pytest.fixture
def small_groups(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Short texts embedded one text per call (each its own transaction); the sentences of each call, in order."""
    monkeypatch.setattr(embedding, "LONG_TEXT_CHARS", 40)
    calls: list[list[str]] = []
    real = embedder.embed

    def recorded(pieces: list[str], model: str) -> Any:
        calls.append(list(pieces))
        return real(pieces, model)

    monkeypatch.setattr(embedder, "embed", recorded)
    return calls


def embedded_rows(project: Project) -> dict[tuple[str, int], bytes]:
    rows = {("passage", row.pk): bytes(row.embeddings) for row in Passage.objects.filter(project=project)
            if row.embeddings is not None and row.sentences}
    rows.update({("sample", row.pk): bytes(row.embeddings) for row in Sample.objects.filter(project=project)
                 if row.embeddings is not None and row.sentences})
    return rows


# ----------------------------------------------------------------------------- embedding


def test_a_killed_embedding_job_is_finished_by_the_next_worker_embedding_each_text_once(
    queue: Path, small_groups: list[list[str]], monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    project = texts_project()
    job = embedding.queue_embedding(project)
    assert job.total == 7
    kill_on_call(monkeypatch, embedder, "embed", 4)  # three texts written, the worker dies on the fourth (only)
    run_until_killed(tasks.embed_project_texts, job)
    before = embedded_rows(project)
    assert (job.status, job.done, len(before)) == (Job.Status.RUNNING, 3, 3)
    assert waiting(queue) == []  # the killed worker's message is gone with it

    calls_before = len(small_groups)
    # Two workers start, the second beside the first: the job's message already waits, it is not queued twice.
    ran = finished_after_worker_start(queue, tasks.embed_project_texts, job, django_capture_on_commit_callbacks,
                                      starts=2)
    assert ran == [(tasks.embed_project_texts.name, job.pk)]
    assert (job.status, job.done, job.total) == (Job.Status.DONE, 7, 7) and job.error == ""
    after = embedded_rows(project)
    assert len(after) == 7 and {key: after[key] for key in before} == before  # the first three were not redone
    # The next worker embedded the four texts left, each once, and none of the three already done.
    redone = [piece for call in small_groups[calls_before:] for piece in call]
    done_first = [piece for call in small_groups[:3] for piece in call]
    assert not set(redone) & set(done_first) and len(small_groups) - calls_before == 4
    worker_start()
    assert waiting(queue) == []  # done: nothing more to queue


def test_a_job_another_process_executes_or_whose_message_waits_is_left_alone(
    queue: Path, django_capture_on_commit_callbacks: Any
) -> None:
    project = texts_project()
    executing, waiting_job, orphaned = (embedding.queue_embedding(project) for _ in range(3))
    Job.objects.filter(pk__in=[executing.pk, orphaned.pk]).update(status=Job.Status.RUNNING)
    tasks.embed_project_texts.delay(waiting_job.pk)  # queued, its message not taken yet
    with jobs.job_lock(executing.pk) as held:
        assert held
        assert jobs.resume_stale_jobs() == [orphaned.pk]
    assert waiting(queue) == sorted([(tasks.embed_project_texts.name, waiting_job.pk),
                                     (tasks.embed_project_texts.name, orphaned.pk)])
    # A message of another task for the executing job's number does not hold it once its lock is free.
    tasks.run_export.delay(executing.pk)
    assert jobs.resume_stale_jobs() == [executing.pk]


# ----------------------------------------------------------------------------- export


def test_a_killed_export_starts_its_file_again_from_scratch_at_the_next_worker_start(
    queue: Path, batch: Batch, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any,
    tmp_path: Path,
) -> None:
    project = batch.project
    options = export.ExportOptions(format="jsonl")
    expected = tmp_path / "expected.jsonl"
    export.export_to_path(project, expected, options)
    assert len(expected.read_text(encoding="utf-8").splitlines()) == 3
    job = export.start_export(project, options, created_by=None)

    real_lines = export_jobs.jsonl_lines

    def first_line_then_killed(*args: Any, **kwargs: Any) -> Any:
        lines = real_lines(*args, **kwargs)
        yield next(lines)
        raise WorkerKilled

    monkeypatch.setattr(export_jobs, "jsonl_lines", first_line_then_killed)
    run_until_killed(tasks.run_export, job)
    folder = export.exports_dir() / str(job.pk)
    (partial,) = folder.iterdir()
    assert len(partial.read_text(encoding="utf-8").splitlines()) == 1  # what the killed worker left on disk
    assert job.status == Job.Status.RUNNING and job.result_path == ""

    monkeypatch.setattr(export_jobs, "jsonl_lines", real_lines)
    queued_again_at_worker_start(queue, tasks.run_export, job)
    job.refresh_from_db()
    assert not folder.exists() and job.done == 0  # the partial file is gone before the job runs again
    deliver_all(queue, django_capture_on_commit_callbacks)

    job.refresh_from_db()
    assert job.status == Job.Status.DONE and job.done == job.total == 3
    assert [path.name for path in folder.iterdir()] == [Path(job.result_path).name]
    assert Path(job.result_path).read_bytes() == expected.read_bytes()


def test_a_failed_export_leaves_no_partial_file(batch: Batch, monkeypatch: pytest.MonkeyPatch, settings: Any,
                                                tmp_path: Path) -> None:
    settings.DATA_DIR = tmp_path
    job = export.start_export(batch.project, export.ExportOptions(format="csv"), created_by=None)

    def broken(*args: Any, **kwargs: Any) -> Any:
        yield "sample_id,\r\n"
        raise ValueError("the disk is full")

    monkeypatch.setattr(export_jobs, "csv_lines", broken)
    with pytest.raises(ValueError):
        export.run_export_job(job.pk)
    job.refresh_from_db()
    assert (job.status, job.error) == (Job.Status.FAILED, "the disk is full")
    assert not (export.exports_dir() / str(job.pk)).exists()


# ----------------------------------------------------------------------------- what cannot go on


def test_a_job_that_cannot_go_on_by_itself_fails_saying_the_worker_stopped_and_what_to_do(
    queue: Path, batch: Batch, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = export.start_export(batch.project, export.ExportOptions(format="jsonl"), created_by=None)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, done=1)
    monkeypatch.setattr(recovery, "RESUMING_TASKS", {kind: name for kind, name in recovery.RESUMING_TASKS.items()
                                                     if kind != Job.Kind.EXPORT})
    worker_start()
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.finished_at is not None
    assert job.error == (f"The worker stopped while job {job.pk} (export) was running, and this kind of job does "
                         "not go on by itself. Whatever it had done is kept; start it again from the project page.")
    assert waiting(queue) == []


def test_every_job_kind_has_a_task_that_resumes_it() -> None:
    assert set(recovery.RESUMING_TASKS) == set(Job.Kind.values)
    for kind in Job.Kind.values:
        task = recovery.resuming_task(kind)
        assert task is not None and task.name.startswith("annotate.tasks."), kind


def test_a_job_the_broker_refuses_to_queue_again_fails_with_the_error(
    queue: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = embedding.queue_embedding(texts_project())
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING)

    def refused(number: int) -> None:
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(tasks.embed_project_texts, "delay", refused)
    assert jobs.resume_stale_jobs() == []
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert job.error.startswith(f"The worker stopped while job {job.pk} (sentence splitting and embedding) was "
                                "running, and the job could not be queued for the worker: ConnectionRefusedError:")
    assert "Then start it again." in job.error


# ----------------------------------------------------------------------------- a failure on a locked database


def test_an_embedding_job_that_fails_on_a_locked_database_is_still_marked_failed(
    batch: Batch, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = embedding.queue_embedding(batch.project)
    locked = OperationalError("database is locked")

    def embed_on_a_locked_database(pieces: list[str], model: str) -> Any:
        raise locked

    monkeypatch.setattr(embedder, "embed", embed_on_a_locked_database)
    monkeypatch.setattr(failure, "LOCKED_WAIT", wait_none())
    real_update = QuerySet.update
    refused: list[int] = []

    def update(self: QuerySet, **values: Any) -> int:
        # The job's own "failed" write meets the lock twice before the database is free again.
        if self.model is Job and values.get("status") == Job.Status.FAILED and len(refused) < 2:
            refused.append(1)
            raise OperationalError("database is locked")
        return real_update(self, **values)

    monkeypatch.setattr(QuerySet, "update", update)
    with pytest.raises(OperationalError):
        embedding.run_embedding_job(job.pk)
    job.refresh_from_db()
    assert len(refused) == 2
    assert (job.status, job.error) == (Job.Status.FAILED, "database is locked") and job.finished_at is not None


def test_only_lock_errors_are_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(failure, "LOCKED_WAIT", wait_none())
    tries: list[str] = []

    def write(error: Exception) -> Any:
        def attempt() -> None:
            tries.append(str(error))
            raise error
        return attempt

    with pytest.raises(OperationalError):
        jobs.retry_when_locked(write(OperationalError("database is locked")))
    assert len(tries) == failure.LOCKED_ATTEMPTS
    tries.clear()
    with pytest.raises(OperationalError):
        jobs.retry_when_locked(write(OperationalError("no such table: annotate_job")))
    assert len(tries) == 1
    assert jobs.is_lock_error(OperationalError("deadlock detected")) and not jobs.is_lock_error(ValueError("locked"))
