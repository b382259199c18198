"""One process executes a run at a time: an exclusive lock file per run (the kernel drops it when the process
dies, SIGKILL included), so a worker that starts can tell a run orphaned by a killed worker from one still
executing and queue it again (`resume_stale_runs`)."""

from __future__ import annotations

import fcntl
import logging
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

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
    """Queue again every running run that no process is executing; the ids queued.

    The embedded broker (kombu's filesystem transport) removes a message when a
    worker takes it, so a worker killed mid-run (SIGKILL, power loss) loses the
    task despite acks_late; the worker calls this when it starts (judging.tasks)
    and the run goes on where it stopped. A queued run's message is still in the
    queue (a run is marked running as soon as a worker takes it), so it is left
    alone. A run between two slices gets a second message, which finds it done
    (or being executed) and does nothing. Each run queued again counts one more
    ``resumed``.
    """
    resumed = []
    for run_id in JudgeRun.objects.filter(status=JudgeRun.Status.RUNNING).exclude(
        scope=JudgeRun.Scope.IMPORTED
    ).order_by("pk").values_list("pk", flat=True):
        if not is_run_executing(run_id):
            _queue_again(run_id)
            resumed.append(run_id)
    if resumed:
        logger.info("judge runs queued again after a worker start: %s", ", ".join(map(str, resumed)))
    return resumed
