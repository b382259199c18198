"""One process executes a run at a time: an exclusive lock file per run (the kernel drops it when the process
dies, SIGKILL included). A worker that starts tells a run orphaned by a killed worker (neither locked nor waiting in
the broker's queue) from one still in hand (executing, or its next slice waiting) and queues it again
(`resume_stale_runs`). Synthetic sets use the same lock files and queue reading (`exclusive`, `waiting_ids`)."""

from __future__ import annotations

import base64
import fcntl
import json
import logging
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from celery import Task
from django.conf import settings
from django.db import transaction
from django.db.models import F

from judging.models import JudgeRun
from judging.services.runs.start import _queue_now

logger = logging.getLogger(__name__)


def lock_file(name: str) -> Path:
    """The path of a lock file in the data folder's ``locks`` (made when missing)."""
    folder = Path(settings.DATA_DIR) / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def _lock_path(run_id: int) -> Path:
    return lock_file(f"judge-run-{run_id}.lock")


@contextmanager
def exclusive(path: Path) -> Iterator[bool]:
    """Hold an exclusive flock on ``path`` for the block; yields False at once when another process holds it.

    flock locks belong to the open file, so the kernel releases them when the
    holder exits in any way, SIGKILL included: a free lock on work marked as
    running means nobody is doing it any more.
    """
    with open(path, "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def execution_lock(run_id: int) -> AbstractContextManager[bool]:
    """Hold the run's lock file while executing it; yields False when another process holds it (see ``exclusive``)."""
    return exclusive(_lock_path(run_id))


def is_run_executing(run_id: int) -> bool:
    """Whether a process on this machine is executing the run now."""
    with execution_lock(run_id) as free:
        return not free


def _first_argument(path: Path, task_name: str) -> int | None:
    """The first positional argument (an id) of a message file of the filesystem broker queuing `task_name`, or None.

    None too for a file taken by a worker meanwhile, one still being written, or
    one of another task: each leaves its work to the lock check.
    """
    try:
        message = json.loads(path.read_bytes())
        if message["headers"]["task"] != task_name:
            return None
        body = message["body"]
        if message["properties"].get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]  # task protocol 2: [args, kwargs, embed]
        return int(args[0])
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None


def waiting_ids(task: Task) -> set[int]:
    """The first positional argument (the id) of each message for `task` waiting in the filesystem broker's queue
    folder; empty for another broker.

    Work between two steps (a run between slices, a set whose message no
    worker has taken yet) holds no lock, yet its next message is queued: such
    work is in hand, not orphaned. Only the broker's folder tells the two
    apart, and the embedded broker keeps each message there as a file until a
    worker takes it.
    """
    folder = (getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", None) or {}).get("data_folder_in")
    if not folder or not Path(folder).is_dir():
        return set()
    found = (_first_argument(path, task.name) for path in Path(folder).glob("*.msg"))
    return {number for number in found if number is not None}


def waiting_run_ids() -> set[int]:
    """The runs whose execution message (a first run or a next slice) waits in the filesystem broker's queue."""
    from judging.tasks import execute_judge_run

    return waiting_ids(execute_judge_run)


def _forget_lock(run_id: int) -> None:
    # A finished run is never executed again (execute_run returns at once), so its lock file can go.
    _lock_path(run_id).unlink(missing_ok=True)


def _queue_again(run_id: int) -> None:
    """Queue an orphaned run and count the resumption on its row, together.

    The requests its stopped worker had in flight reach no judgement, so the
    run's calls, tokens and cost miss them; recording each request before it is
    sent would cost a write per call, so the run says how often this happened
    instead. F() adds one in the database, so no concurrent write to the row is
    lost or loses this one.
    """
    with transaction.atomic():
        JudgeRun.objects.filter(pk=run_id).update(resumed=F("resumed") + 1)
        _queue_now(run_id)


def resume_stale_runs() -> list[int]:
    """Queue again every running run that no process is executing and no message waits for; the ids queued.

    The embedded broker (kombu's filesystem transport) removes a message when a
    worker takes it, so a worker killed mid-run (SIGKILL, power loss) loses the
    task despite acks_late; the worker calls this when it starts (judging.tasks)
    and the run goes on where it stopped. A queued run's message is still in the
    queue (a run is marked running as soon as a worker takes it), so it is left
    alone; so is a running run between two slices whose next slice waits in the
    queue: nothing stopped it, and a second message would only start a second
    chain of slices beside the first and count a resumption that never
    happened. Each run queued again counts one more ``resumed``.

    The queue is read before the locks, so a message a worker takes in between
    shows as the lock its execution holds; only in the instant before that
    execution takes the lock does the run look orphaned, and it is counted and
    queued again: the error goes towards a spare message, never towards a run
    left running for ever.
    """
    running = list(JudgeRun.objects.filter(status=JudgeRun.Status.RUNNING).exclude(
        scope=JudgeRun.Scope.IMPORTED
    ).order_by("pk").values_list("pk", flat=True))
    waiting = waiting_run_ids() if running else set()
    resumed = []
    for run_id in running:
        if run_id not in waiting and not is_run_executing(run_id):
            _queue_again(run_id)
            resumed.append(run_id)
    if resumed:
        logger.info("judge runs queued again after a worker start: %s", ", ".join(map(str, resumed)))
    return resumed
