"""Executing a run (the Celery task and the `judge` command both call `execute_run`): its entry points, the run's
lock, slices and resumption, and how it ends (done, failed, cancelled, or going on in its next slice). The judging
itself is the judge kind's: rubric_calls (call cache, thread pool of endpoint calls), nli_scoring (chunks of pairs)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import ExitStack, nullcontext

from celery.exceptions import SoftTimeLimitExceeded
from django.db import transaction
from django.db.models import F, Max
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotate.services.jobs import CancelRefused
from judging.models import Judge, JudgeRun
from judging.services.runs import interrupt
from judging.services.runs.cancel import RunCancelled, cancel_run_from_command
from judging.services.runs.locks import _forget_lock, execution_lock, execution_mark
from judging.services.runs.results import ACTIVE, _fail, _finish, _ResultWriter
from judging.services.runs.start import _queue_now
from judging.services.runs.targets import target_queryset

logger = logging.getLogger(__name__)

# The Celery task executes a run in slices of about this many seconds, then queues the rest behind other work.
SLICE_SECONDS = 900

# Called with the run after each write of its progress (and while it waits for answers); the `judge` command prints.
Progress = Callable[[JudgeRun], None]


class RunFailed(Exception):
    """A run that cannot go on (endpoint, model, key variable); the message names the setting."""


def execute_new_run(
    start: Callable[[], JudgeRun | None], *, follow_up: bool = True, endpoint_checked: bool = False,
    progress: Progress | None = None,
) -> JudgeRun | None:
    """Start a run with ``start`` (a ``start_run(..., queue=False)``; None: nothing to run) and execute it here, in
    the foreground (the `judge` and `triage` commands); the run as it ended, or None.

    The run's lock is taken before the run is committed and held until it ends. Taken after the commit, a worker
    starting in between would find the run queued, with no message and nobody executing it (resume_stale_runs),
    and queue a spare message for it; the run's ``resumed`` would count a resumption that never happened, and the
    worker could even take the run before this process does.
    """
    with ExitStack() as holding:
        with transaction.atomic():
            run = start()
            if run is None:
                return None
            held = holding.enter_context(execution_lock(run.pk))
        return execute_run(run.pk, follow_up=follow_up, endpoint_checked=endpoint_checked, lock_held=held,
                           progress=progress)


def execute_run(
    run_id: int, *, max_seconds: float | None = None, follow_up: bool = True, endpoint_checked: bool = False,
    lock_held: bool = False, progress: Progress | None = None,
) -> JudgeRun:
    """Judge what the run has not judged yet; finish it (flag, queue the explainer) when nothing is left.

    Resumable and idempotent: a finished run is returned as it is, a run being
    executed by another process is left to it. With `max_seconds`, stops taking
    new targets after that long, writes what is in flight and queues the rest
    (the Celery task works in slices). `follow_up` False leaves the explainer of
    a first pass to the caller (the `triage` command runs it in the foreground).
    `endpoint_checked`: the caller has just checked the endpoint (the `judge`
    command, before writing anything), so it is not asked twice. `lock_held`:
    the caller holds the run's lock until this returns (``execute_new_run``,
    which gives no `max_seconds`: no next slice is queued under its lock). `progress`: called with the run as
    its counters are written (the `judge` command's progress lines).

    A Ctrl-C in a command executing the run here (interrupt.cancel_on_ctrl_c) cancels it as an admin's Cancel
    does. A rubric run whose endpoint fails OUTAGE_FAILURES calls in a row stops, failed "Endpoint unreachable",
    leaving the samples it did not send unjudged.
    """
    run = JudgeRun.objects.select_related("judge", "project", "rubric").get(pk=run_id)
    if run.status in (JudgeRun.Status.DONE, JudgeRun.Status.FAILED) or run.scope == JudgeRun.Scope.IMPORTED:
        return run
    try:
        with nullcontext(True) if lock_held else execution_lock(run.pk) as held:
            if not held:
                logger.info("judge run %s is being executed by another process", run.pk)
                return run
            run.refresh_from_db()
            if run.status in (JudgeRun.Status.DONE, JudgeRun.Status.FAILED):
                return run
            with execution_mark(run.pk) as interrupted:
                run, ended = _execute_held(run, interrupted=interrupted, max_seconds=max_seconds,
                                           follow_up=follow_up, endpoint_checked=endpoint_checked, progress=progress)
    except _GoesOn as going_on:
        # The next slice is queued once the lock is free: queued while it was held, a second pool process could
        # take the message at once, find the lock taken, and leave the run waiting for a worker's restart.
        _queue_now(run.pk)
        if going_on.stopped_by is not None:
            raise going_on.stopped_by from None
        return going_on.run
    if ended:
        _forget_lock(run.pk)
    return run


class _GoesOn(Exception):  # noqa: N818 - a signal, not an error
    """Raised out of the run's lock by an execution that stopped with work left: its next slice is queued once the
    lock is released. ``stopped_by``: the time limit that stopped it, raised again after the queuing."""

    def __init__(self, run: JudgeRun, stopped_by: BaseException | None = None) -> None:
        super().__init__(run.pk)
        self.run = run
        self.stopped_by = stopped_by


def _execute_held(
    run: JudgeRun, *, interrupted: bool, max_seconds: float | None, follow_up: bool, endpoint_checked: bool,
    progress: Progress | None = None,
) -> tuple[JudgeRun, bool]:
    """``execute_run`` once it holds the run's lock; the run, and whether it ended (done, or cancelled).

    ``interrupted``: the run's last execution never left (its process was killed: SIGKILL, the OOM killer). A run
    that execution had marked running is counted resumed here, whoever queued this execution: Celery delivering the
    task again after its pool process died, or a starting worker (which counts it itself, and clears the mark).
    """
    # Imported here: both modules import this one (RunFailed, Progress, stop_if_interrupted).
    from judging.services.runs.nli_scoring import execute_nli
    from judging.services.runs.rubric_calls import execute_rubric

    resumed = interrupted and run.status == JudgeRun.Status.RUNNING
    started = JudgeRun.objects.filter(pk=run.pk, status__in=ACTIVE).update(
        status=JudgeRun.Status.RUNNING, started_at=Coalesce(F("started_at"), timezone.now()),
        total=target_queryset(run).count(), error="", **({"resumed": F("resumed") + 1} if resumed else {}),
    )
    run.refresh_from_db()
    if not started:  # cancelled since it was read
        return run, False
    if resumed:
        logger.warning("judge run %s: its last execution was stopped mid-run (its process died); going on, "
                       "resumed %s time(s)", run.pk, run.resumed)
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    finished: bool | None  # None: cancelled meanwhile
    try:
        if run.judge.kind == Judge.Kind.RUBRIC:
            finished = execute_rubric(run, deadline, check=not endpoint_checked, progress=progress)
        else:
            finished = execute_nli(run, deadline, progress=progress)
    except RunFailed as failure:
        return _fail(run, str(failure)), False
    except RunCancelled:
        finished = None
    except SoftTimeLimitExceeded as limit:
        # What was written stays; the run stays "running" and the next execution goes on from there.
        logger.warning("judge run %s stopped by its time limit; queued again", run.pk)
        raise _GoesOn(run, stopped_by=limit) from None
    except Exception as error:
        try:
            _fail(run, f"the run stopped on an unexpected error: {type(error).__name__}: {error}")
        except Exception:  # noqa: BLE001 - e.g. the database went away; the original error is the one to see
            logger.exception("judge run %s: could not record its failure", run.pk)
        raise
    if finished is False:
        raise _GoesOn(run)
    if finished:
        try:
            run = _finish(run, follow_up=follow_up)
        except RunCancelled:
            finished = None
    if finished is None:
        # Cancelled meanwhile (cancel_run): the judgements written stay, their answers in the call cache.
        run = _counted_until_last_answer(run)
        logger.info("judge run %s was cancelled; it stopped after %s judgements", run.pk, run.done)
    return run, True


def _counted_until_last_answer(run: JudgeRun) -> JudgeRun:
    """A cancelled run's time runs until its last judgement was stored: the answers of the calls in flight at the
    cancel are stored after it (rubric_calls._keep_in_flight), and the run waited for them."""
    run.refresh_from_db()
    last = run.judgements.aggregate(last=Max("created_at"))["last"]
    if last is not None and run.finished_at is not None and last > run.finished_at:
        JudgeRun.objects.filter(pk=run.pk).update(finished_at=last)
        run.refresh_from_db()
    return run


def stop_if_interrupted(run: JudgeRun, writer: _ResultWriter | None = None) -> None:
    """Cancel the run and raise RunCancelled when a Ctrl-C asked the command executing it here to stop
    (interrupt.cancel_on_ctrl_c); ``writer``'s results are written first, while the run still takes them."""
    if not interrupt.requested():
        return
    if writer is not None:
        writer.flush()
    try:
        cancel_run_from_command(run, interrupt.command_name())
    except CancelRefused:
        pass  # it ended meanwhile (cancelled from its page): stopping is all that is left to do
    raise RunCancelled(run.pk)

