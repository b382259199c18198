"""Cancelling a queued or running judge run (project admins), the way out of a run no worker executes.

A run queued with no worker says "Queued" for good, and a run-start retried meanwhile answers that run
(start_or_reuse_run), so no new run of the judge can start. Cancelled, the run is failed, "Cancelled by <user> at
<time>." (annotate.services.jobs' words and refusals), who and when kept in ``cancelled_by`` and ``cancelled_at``,
and a new run of the judge can start. A worker that picks it
up later does nothing (execute_run only starts a queued or running run); one executing it stops at its next
progress write (results._ResultWriter.flush raises RunCancelled), sending no new call, and keeps the judgements it
stored, the answers of the calls it had in flight then included (rubric_calls._keep_in_flight): their answers are in the
call cache, so the next run of the judge is answered from it without paying again.
"""

from __future__ import annotations

import logging

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from annotate.services.jobs import CancelRefused, cancelled_message, ended_in_words
from judging.models import JudgeRun
from judging.models.cancelling import command_canceller

logger = logging.getLogger(__name__)


class RunCancelled(Exception):
    """Raised inside an execution whose run was cancelled meanwhile: it stops, keeping what it wrote."""


def cancel_run(run: JudgeRun, user: AbstractBaseUser) -> JudgeRun:
    """Mark a queued or running run failed, "Cancelled by <user> at <time>.", with ``cancelled_by`` and
    ``cancelled_at`` (which the pages and the API read; the error's text is for people); returns ``run``, updated.

    The row is locked while it is read and written, so a cancel that comes while the run's execution writes its
    outcome waits for it (and is then refused if the run ended). Raises annotate's CancelRefused, changing
    nothing, when the run has already ended or holds imported outputs (which never run).
    """
    return _cancel(run, user.get_username(), user)


def cancel_run_from_command(run: JudgeRun, command: str) -> JudgeRun:
    """Cancel a run that a command executing it in the foreground was told to stop (Ctrl-C): as :func:`cancel_run`,
    "Cancelled by command (Ctrl-C in manage.py <command>) at <time>.", with no ``cancelled_by`` (a command has no
    user; CancellableProgress.canceller_name reads who from the message). Refusals: those of cancel_run."""
    return _cancel(run, command_canceller(command), None)


def _cancel(run: JudgeRun, who: str, user: AbstractBaseUser | None) -> JudgeRun:
    with transaction.atomic():
        locked = JudgeRun.objects.select_for_update().get(pk=run.pk)
        if locked.scope == JudgeRun.Scope.IMPORTED:
            raise CancelRefused(f"Run {locked.pk} holds imported outputs, which never run: there is nothing to "
                                "cancel and nothing was changed.")
        if not locked.cancellable:
            raise CancelRefused(ended_in_words(locked, _finished_in_words, noun="Run"))
        now = timezone.now()
        locked.status = JudgeRun.Status.FAILED
        locked.error = cancelled_message(who, now)
        locked.finished_at = now
        locked.cancelled_by = user
        locked.cancelled_at = now
        locked.save(update_fields=["status", "error", "finished_at", "cancelled_by", "cancelled_at"])
    logger.info("judge run %s of project %s cancelled by %s (%s of %s judged)", locked.pk, locked.project_id,
                who, locked.done, locked.total)
    for name in ("status", "error", "finished_at", "cancelled_by", "cancelled_at", "done", "scored", "failed", "calls",
                 "cached"):
        setattr(run, name, getattr(locked, name))
    return run


def _finished_in_words(run: JudgeRun) -> str:
    return f"{run.scored} of {run.total} scored"
