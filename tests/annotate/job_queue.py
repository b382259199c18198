"""A worker killed mid-job and the next one starting, with real kombu messages in a test's own queue folder.

The embedded broker's folders point at the test's folder (tests/judging/broker_queue.py), and each job task's
``delay`` sends a real message there, as a worker's would. ``WorkerKilled`` stands for SIGKILL: raised from inside a
job's work, it passes every ``except Exception`` (no failure is recorded, the job stays running), the transaction
in progress is rolled back and the job's lock file is let go, as the kernel does for a killed process.

The kill-then-restart tests take the ``queue`` fixture, which they import (``job_queue_fixture  # noqa: F401``;
the function has another name than the fixture so ruff sees no redefinition where a test takes ``queue``). A test
kills the worker with ``kill_on_call`` and ``run_until_killed``, then lets the next one take the job over with
``finished_after_worker_start`` (or its two halves, ``queued_again_at_worker_start`` and ``deliver_all``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from annotate import tasks
from annotate.models import Job
from annotate.services.jobs import RESUMING_TASKS, locks
from config.celery import app
from tests.judging.broker_queue import messages_in, publish, use_broker_queue


class WorkerKilled(BaseException):
    """The worker process died here (kill -9): nothing after this line of its work ran."""


def use_job_queue(settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's own broker queue folder; every annotate job task sends its messages there."""
    queue = use_broker_queue(settings, tmp_path, monkeypatch)
    for name in RESUMING_TASKS.values():
        task = getattr(tasks, name)
        monkeypatch.setattr(task, "delay", lambda number, task=task: publish(task, number))
    return queue


@pytest.fixture(name="queue")
def job_queue_fixture(settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's own queue folder (``use_job_queue``), with lock files and exports in its own data folder."""
    settings.DATA_DIR = tmp_path / "data"
    return use_job_queue(settings, tmp_path, monkeypatch)


def kill_on_call(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, call: int) -> None:
    """``module.name`` kills the worker on its ``call``-th call (counting from 1); the other calls go through."""
    real = getattr(module, name)
    seen = [0]

    def dying(*args: Any, **kwargs: Any) -> Any:
        seen[0] += 1
        if seen[0] == call:
            raise WorkerKilled
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, dying)


def worker_start() -> None:
    """What a starting worker runs for annotate's jobs (the worker_ready hook)."""
    tasks.resume_jobs_on_worker_start()


def waiting(queue: Path) -> list[tuple[str, int]]:
    """(task name, job id) of each message waiting in the queue folder, sorted."""
    found = (locks._message_of(path) for path in messages_in(queue))
    return sorted(message for message in found if message is not None)


def deliver_all(queue: Path, capture_on_commit: Any, limit: int = 50) -> list[tuple[str, int]]:
    """A live worker: take each waiting message (its file goes) and run its task, the tasks it queues on commit
    included, until the queue is empty; the (task name, job id) run, in order."""
    ran: list[tuple[str, int]] = []
    while messages_in(queue):
        assert len(ran) < limit, f"still messages after {limit} tasks: {waiting(queue)}"
        path = sorted(messages_in(queue))[0]
        message = locks._message_of(path)
        path.unlink()
        assert message is not None, path
        name, number = message
        with capture_on_commit(execute=True):
            app.tasks[name](number)
        ran.append(message)
    return ran


def run_until_killed(task: Any, job: Job) -> None:
    """A worker runs ``task`` for ``job`` and is killed in it (the test set where); ``job`` reloaded after."""
    with pytest.raises(WorkerKilled):
        task(job.pk)
    job.refresh_from_db()


def queued_again_at_worker_start(queue: Path, task: Any, job: Job, starts: int = 1) -> None:
    """``starts`` workers start (one after the other); the killed job's task is queued again, once, and nothing else.

    Two starts check that a worker starting beside another does not queue the job a second time.
    """
    for _ in range(starts):
        worker_start()
    assert waiting(queue) == [(task.name, job.pk)]


def finished_after_worker_start(
    queue: Path, task: Any, job: Job, capture_on_commit: Any, starts: int = 1
) -> list[tuple[str, int]]:
    """Workers start, the job is queued again once and a live worker runs what is queued; ``job`` reloaded after.

    The (task name, job id) the live worker ran, in order (``deliver_all``).
    """
    queued_again_at_worker_start(queue, task, job, starts)
    ran = deliver_all(queue, capture_on_commit)
    job.refresh_from_db()
    return ran
