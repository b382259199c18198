"""Which background work is in hand: held by a live process (a lock file), or waiting in the embedded broker's queue.

Shared by every kind of background work of both apps: annotate's jobs (embedding, exports, perturbation, span
vectors, pair rounds), judging's runs and synthetic sets. kombu's filesystem transport removes a message from its
queue folder when a worker takes it, so a worker killed mid-task (SIGKILL, power loss, the 7 s grace of `make run`
running out) leaves its work marked queued or running with no message left to deliver it again. A starting worker
tells such orphaned work from work still in hand with the two facts kept here, then queues it again.
"""

from __future__ import annotations

import base64
import fcntl
import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import TypeVar

from celery import Task
from django.conf import settings
from django.db import models, transaction


def lock_file(name: str) -> Path:
    """The path of a lock file in the data folder's ``locks`` (made when missing)."""
    folder = Path(settings.DATA_DIR) / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


@contextmanager
def exclusive(path: Path) -> Iterator[bool]:
    """Hold an exclusive flock on ``path`` for the block; yields False at once when another holder has it.

    flock locks belong to the open file, so the kernel releases them when the
    holder exits in any way, SIGKILL included: a free lock on work marked as
    running means nobody is doing it any more. A second ``exclusive`` on the same
    path in the same process is refused too (another open file), so work must
    queue its next step only after leaving the block.
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


def _message_of(path: Path) -> tuple[str, int] | None:
    """(task name, first positional argument) of a message file of the filesystem broker, or None.

    None too for a file taken by a worker meanwhile, one still being written, or
    one whose first argument is not an id: each leaves its work to the lock check.
    """
    try:
        message = json.loads(path.read_bytes())
        task_name = message["headers"]["task"]
        body = message["body"]
        if message["properties"].get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]  # task protocol 2: [args, kwargs, embed]
        return str(task_name), int(args[0])
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None


def waiting_ids(task: Task) -> set[int]:
    """The first positional argument (the id) of each message for `task` waiting in the filesystem broker's queue
    folder; empty for another broker.

    Work between two steps (a run between slices, a job whose message no worker
    has taken yet) holds no lock, yet its next message is queued: such work is
    in hand, not orphaned. Only the broker's folder tells the two apart, and the
    embedded broker keeps each message there as a file until a worker takes it.
    """
    folder = (getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", None) or {}).get("data_folder_in")
    if not folder or not Path(folder).is_dir():
        return set()
    found: set[int] = set()
    for path in Path(folder).glob("*.msg"):
        message = _message_of(path)
        if message is not None and message[0] == task.name:
            found.add(message[1])
    return found


def orphaned_ids(ids: Iterable[int], task: Task, is_executing: Callable[[int], bool]) -> list[int]:
    """The ids among ``ids`` (work marked queued or running) that no message for ``task`` waits for and no process
    executes (``is_executing``: its lock is held), in the order given.

    The queue is read before the locks, so a message a worker takes in between
    shows as the lock its execution holds; only in the instant before that
    execution takes the lock does the work look orphaned, and the error goes
    towards a spare message (which then finds the work locked or done), never
    towards work left running for ever.
    """
    ids = list(ids)
    if not ids:
        return []
    waiting = waiting_ids(task)
    return [number for number in ids if number not in waiting and not is_executing(number)]


W = TypeVar("W", bound=models.Model)


def start_held(
    holding: ExitStack, start: Callable[[], W | None], lock: Callable[[int], AbstractContextManager[bool]]
) -> tuple[W | None, bool]:
    """Start work that this process executes itself (a command running a job in the foreground): ``start`` creates
    it without queuing it (None: nothing to do), in a transaction, and its lock (``lock(work.pk)``) is taken before
    that transaction commits and held on ``holding`` until the caller's block ends; the work, and whether the lock
    is held (the executing service is then told so, e.g. ``lock_held=True``).

    Taken after the commit, a worker starting in between (``orphaned_ids``) would find the work queued, with no
    message and nobody executing it, and queue a spare message for it: counted as a resumption that never happened,
    and the worker could take the work before this process does. (judging.services.runs.execute_new_run does the
    same for judge runs.)
    """
    with transaction.atomic():
        work = start()
        if work is None:
            return None, False
        return work, holding.enter_context(lock(work.pk))


# --- annotate's jobs ---------------------------------------------------------------------------------------------


def _job_lock_path(job_id: int) -> Path:
    return lock_file(f"job-{job_id}.lock")


def job_lock(job_id: int) -> AbstractContextManager[bool]:
    """Hold the job's lock file while executing it; yields False when another process holds it (see ``exclusive``).

    Every job's service holds it for the whole of its work (the Celery task and a
    command running the job in the foreground alike), so a job whose lock is free
    is being executed by nobody.
    """
    return exclusive(_job_lock_path(job_id))


def is_job_executing(job_id: int) -> bool:
    """Whether a process on this machine is executing the job now."""
    with job_lock(job_id) as free:
        return not free


def forget_job_lock(job_id: int) -> None:
    """Remove the lock file of a job that has ended: it is never executed again."""
    _job_lock_path(job_id).unlink(missing_ok=True)
