"""One process executes a run at a time: an exclusive lock file per run (the kernel drops it when the process
dies, SIGKILL included). A worker that starts tells a run orphaned by a killed worker (neither locked nor waiting in
the broker's queue) from one still in hand (executing, or its next slice or first message waiting) and queues it
again (`resume_stale_runs`). The lock files and the queue reading are shared with synthetic sets and annotate's jobs
(annotate.services.jobs.locks).

Beside its lock, an execution keeps a mark file while it runs (`execution_mark`) and removes it however it leaves,
except by dying: the next execution that finds it knows the one before was killed mid-run, and counts the run
resumed even when no worker start queued it (Celery delivering the task again after its pool process was killed).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from django.db import transaction
from django.db.models import F

from annotate.services.jobs.locks import exclusive, lock_file, orphaned_ids
from judging.models import JudgeRun
from judging.services.runs.start import _queue_now

logger = logging.getLogger(__name__)


def _lock_path(run_id: int) -> Path:
    return lock_file(f"judge-run-{run_id}.lock")


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


def _mark_path(run_id: int) -> Path:
    return lock_file(f"judge-run-{run_id}.executing")


@contextmanager
def execution_mark(run_id: int) -> Iterator[bool]:
    """Mark the run as being executed for the block (taken while holding its lock); yields whether the last
    execution's mark was still there, i.e. that execution was killed before it could leave.

    The mark is removed however the block ends, an exception included: only a process that dies (SIGKILL, the OOM
    killer, a hard time limit) leaves it behind. A slice that ends and queues the next one leaves no mark, so the
    next slice is not taken for a resumption; a run a starting worker queues again has its mark cleared there
    (``_queue_again`` counts that resumption itself).
    """
    mark = _mark_path(run_id)
    interrupted = mark.exists()
    mark.touch()
    try:
        yield interrupted
    finally:
        mark.unlink(missing_ok=True)


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
        _mark_path(run_id).unlink(missing_ok=True)  # counted here: the execution queued must not count it again
        _queue_now(run_id)


def resume_stale_runs() -> list[int]:
    """Queue again every queued or running run that no process is executing and no message waits for; the ids
    queued.

    The embedded broker (kombu's filesystem transport) removes a message when a
    worker takes it, so a worker killed mid-run (SIGKILL, power loss) loses the
    task despite acks_late; the worker calls this when it starts (judging.tasks)
    and the run goes on where it stopped. A queued run is in the same case when
    its worker took its message and died before starting it (a hung prefork pool
    whose worker was then killed: README, "Deploying for real", step 6); without
    this it would stay queued for good, and a retried start would keep answering
    it. A run whose message still waits in the queue is left alone, queued or
    running between two slices: nothing stopped it, and a second message would
    only start a second chain of slices beside the first and count a resumption
    that never happened. Each run queued again counts one more ``resumed``, as
    annotate's jobs do (annotate.services.jobs.recovery).

    The queue is read before the locks, so a message a worker takes in between
    shows as the lock its execution holds; only in the instant before that
    execution takes the lock does the run look orphaned, and it is counted and
    queued again: the error goes towards a spare message, never towards a run
    left running for ever.
    """
    pending = list(JudgeRun.objects.filter(status__in=(JudgeRun.Status.QUEUED, JudgeRun.Status.RUNNING)).exclude(
        scope=JudgeRun.Scope.IMPORTED
    ).order_by("pk").values_list("pk", flat=True))
    from judging.tasks import execute_judge_run

    resumed = orphaned_ids(pending, execute_judge_run, is_run_executing)
    for run_id in resumed:
        _queue_again(run_id)
    if resumed:
        logger.info("judge runs queued again after a worker start: %s", ", ".join(map(str, resumed)))
    return resumed
