"""Writing a job's end when the database is busy: a failed job must never stay "running".

SQLite answers "database is locked" once its busy timeout runs out (the web
server and the worker write side by side), and the write that records a job's
failure can meet the very lock its job failed on. PostgreSQL can refuse a
write with a deadlock. Each is worth a few more tries after a short wait;
tenacity waits and counts (as judging.clients does for LLM calls).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from django.db import OperationalError, transaction
from django.utils import timezone
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from annotate.models import Job

log = logging.getLogger(__name__)
T = TypeVar("T")

ACTIVE = (Job.Status.QUEUED, Job.Status.RUNNING)
# Up to five tries in all, 0.2 s, 0.4 s, 0.8 s, 1.6 s apart (plus jitter), each after SQLite's own busy timeout.
LOCKED_ATTEMPTS = 5
LOCKED_WAIT = wait_exponential_jitter(initial=0.2, max=2.0, jitter=0.1)


def is_lock_error(error: BaseException) -> bool:
    """A write refused because another one held the database: worth trying again in a moment."""
    if not isinstance(error, OperationalError):
        return False
    text = str(error).lower()
    return "locked" in text or "deadlock" in text


def _say_retrying(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    log.warning("database busy (%s); writing again (attempt %s of %s)", error, state.attempt_number + 1,
                LOCKED_ATTEMPTS)


def retry_when_locked(write: Callable[[], T]) -> T:
    """Run ``write`` in a transaction of its own, again after a short wait while the database is locked; its result.

    Each try is its own transaction (a savepoint inside a caller's), so a refused
    try leaves nothing half written and no broken transaction behind it. Any
    other error, or the last refusal, is raised.
    """
    for attempt in Retrying(retry=retry_if_exception(is_lock_error), stop=stop_after_attempt(LOCKED_ATTEMPTS),
                            wait=LOCKED_WAIT, before_sleep=_say_retrying, reraise=True):
        with attempt, transaction.atomic():
            return write()
    raise AssertionError("unreachable: tenacity returns or raises")  # pragma: no cover


def mark_failed(job_id: int, message: str, *, only_if_active: bool = False) -> bool:
    """Mark the job failed with ``message`` (and when), trying again while the database is locked; whether it was.

    ``only_if_active``: leave a job that has ended meanwhile (done, or cancelled
    by an admin) as it is, keeping its own outcome and message.
    """
    rows = Job.objects.filter(pk=job_id)
    if only_if_active:
        rows = rows.filter(status__in=ACTIVE)
    return bool(retry_when_locked(
        lambda: rows.update(status=Job.Status.FAILED, error=message, finished_at=timezone.now())
    ))
