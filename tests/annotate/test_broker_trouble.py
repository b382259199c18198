"""The worker and its embedded broker on a bad day: an exchange file a full disk left empty, a broker folder removed
while a job runs, SQLite locked by another process for longer than its busy timeout. Each leaves the job to finish
(config.broker's repair, a next slice that stays resumable, a slice queued again later), none fails it for good.
The run-dev side (a worker that cannot start any more keeps the web server up): tests/test_run_script.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kombu import Connection

from annotate import tasks
from annotate.models import Job
from annotate.services import embedding, jobs
from tests.annotate.job_queue import (
    deliver_all,
    job_queue_fixture,  # noqa: F401  (the queue fixture)
    waiting,
    worker_start,
)
from tests.annotate.test_jobs_resumed import texts_project

ROOT = Path(__file__).resolve().parents[2]


def run_scenario(name: str, tmp_path: Path) -> dict[str, Any]:
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "DEBUG")
           and not key.startswith("CELERY_")}
    env.update(FAITHLAB_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="config.settings", LOG_LEVEL="WARNING",
               EMBEDDING_WARMUP="false")
    result = subprocess.run([sys.executable, "-c", f"import tests.annotate.broker_scenarios as s; s.{name}()"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert result.returncode == 0, result.stderr[-5000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- an unreadable exchange file


@pytest.mark.parametrize("content", [b"", b"[[\"celery\", \"\", \"cel", b"{}"], ids=["empty", "cut", "not-a-list"])
def test_the_transport_repairs_an_unreadable_exchange_file_and_sends(tmp_path: Path, content: bytes) -> None:
    from config import broker

    options = broker.folder_options(tmp_path / "broker")
    assert broker.repair(options) == [f"made the missing broker folder {options[name]}" for name in
                                      ("data_folder_in", "data_folder_out", "processed_folder", "control_folder")
                                      if name != "data_folder_out"]
    exchange = Path(options["control_folder"]) / "celery.exchange"
    exchange.write_bytes(content)
    broker.Transport.global_state.clear()  # as in a process starting: kombu reads the file when it binds the queue
    with Connection("filesystem://", transport="config.broker:Transport", transport_options=options) as connection:
        tasks.embed_project_texts.apply_async((7,), connection=connection)
    assert len(list(Path(options["data_folder_in"]).glob("*.msg"))) == 1
    assert json.loads(exchange.read_text()) == [["celery", "", "celery"]]


def test_an_empty_exchange_file_is_repaired_and_a_real_worker_embeds_the_job(tmp_path: Path) -> None:
    """kombu failed every worker start and every send with JSONDecodeError on a 0-byte celery.exchange."""
    seen = run_scenario("empty_exchange_then_a_real_worker", tmp_path)
    assert seen["sent"] == {"status": Job.Status.QUEUED, "error": ""}, seen
    assert (seen["status"], seen["done"], seen["error"]) == (Job.Status.DONE, seen["total"], ""), seen
    assert seen["worker_alive"], seen["worker_tail"]
    assert "JSONDecodeError" not in seen["worker_tail"]
    assert json.loads(seen["exchange"])  # written again by kombu


# ----------------------------------------------------------------------------- a broker folder removed mid-job


@pytest.fixture
def one_text_a_slice(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.EMBEDDING_SLICE_SENTENCES = 1
    monkeypatch.setattr(embedding, "LONG_TEXT_CHARS", 40)


@pytest.mark.django_db
def test_a_next_slice_the_broker_cannot_take_leaves_the_job_running_for_the_next_worker_start(
    queue: Path, one_text_a_slice: None, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        job = embedding.queue_embedding(texts_project())
    (message,) = waiting(queue)
    for path in queue.glob("*.msg"):
        path.unlink()
    # The queue folder is gone, and a file of its name stops it from being made again: the send cannot be done.
    queue.rmdir()
    queue.write_text("")
    with django_capture_on_commit_callbacks(execute=True):
        tasks.embed_project_texts(job.pk)
    job.refresh_from_db()
    assert (job.status, job.done) == (Job.Status.RUNNING, 1), job.error
    assert job.error.startswith(f"The next part of job {job.pk} (sentence splitting and embedding) could not be "
                                "queued for the worker: "), job.error
    assert str(queue) in job.error and "The next worker start" in job.error

    queue.unlink()
    queue.mkdir()
    worker_start()
    assert waiting(queue) == [message]
    deliver_all(queue, django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert (job.status, job.done, job.total, job.error) == (Job.Status.DONE, 7, 7, "")
    assert job.resumed == 1


@pytest.mark.django_db
def test_a_removed_queue_folder_is_made_again_for_the_next_slice(
    queue: Path, one_text_a_slice: None, django_capture_on_commit_callbacks: Any
) -> None:
    job = embedding.queue_embedding(texts_project())
    for path in queue.glob("*.msg"):
        path.unlink()
    queue.rmdir()
    with django_capture_on_commit_callbacks(execute=True):
        tasks.embed_project_texts(job.pk)
    assert waiting(queue) == [(tasks.embed_project_texts.name, job.pk)]
    deliver_all(queue, django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert (job.status, job.done, job.error) == (Job.Status.DONE, 7, "")


@pytest.mark.django_db
def test_a_new_job_the_broker_refuses_names_the_folder_and_what_was_tried(
    queue: Path, django_capture_on_commit_callbacks: Any
) -> None:
    queue.rmdir()
    queue.write_text("")  # not a folder, and none can be made there
    with django_capture_on_commit_callbacks(execute=True):
        job = embedding.queue_embedding(texts_project())
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert str(queue) in job.error and "must exist (restarting" not in job.error, job.error
    assert "a repair of the broker's folders found nothing to do" in job.error, job.error


# ----------------------------------------------------------------------------- a locked database


def test_a_slice_that_finds_sqlite_locked_is_queued_again_and_the_job_ends_done(tmp_path: Path) -> None:
    seen = run_scenario("locked_database_then_released", tmp_path)
    assert (seen["status"], seen["done"], seen["error"]) == (Job.Status.DONE, seen["total"], ""), seen
    # One lock met, then texts embedded: the count starts afresh, so a long job fails only on locks in a row.
    assert embedding.LOCKED_TRIES not in seen["options"], seen
    assert seen["countdowns"][:2] == [0, 0.5], seen


@pytest.mark.django_db
def test_a_real_error_in_a_slice_still_fails_the_job(queue: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db import OperationalError

    job = embedding.queue_embedding(texts_project())

    def broken(pieces: list[str], model: str) -> Any:
        raise OperationalError("no such table: annotate_passage")

    monkeypatch.setattr(embedding.embedder, "embed", broken)
    with pytest.raises(OperationalError):
        tasks.embed_project_texts(job.pk)
    job.refresh_from_db()
    assert (job.status, job.error) == (Job.Status.FAILED, "no such table: annotate_passage")


@pytest.mark.django_db
def test_the_locked_tries_are_bounded(
    queue: Path, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    from django.db import OperationalError

    job = embedding.queue_embedding(texts_project())
    sent: list[float | None] = []
    monkeypatch.setattr(tasks.embed_project_texts, "apply_async",
                        lambda args, countdown=None, **kwargs: sent.append(countdown))

    def locked(pieces: list[str], model: str) -> Any:
        raise OperationalError("database is locked")

    monkeypatch.setattr(embedding.embedder, "embed", locked)
    for _ in embedding.LOCKED_RETRY_SECONDS:
        with django_capture_on_commit_callbacks(execute=True):
            tasks.embed_project_texts(job.pk)
        job.refresh_from_db()
        assert job.status in jobs.ACTIVE and "database was locked" in job.error, job.error
    assert sent == list(embedding.LOCKED_RETRY_SECONDS)
    with pytest.raises(OperationalError):
        tasks.embed_project_texts(job.pk)
    job.refresh_from_db()
    assert (job.status, job.error) == (Job.Status.FAILED, "database is locked")
