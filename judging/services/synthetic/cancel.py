"""Cancelling a queued or running synthetic set (project admins), the way out of a set no worker writes.

A set queued with no worker says "Queued" for good. Cancelled, it is failed, its notes ending "Cancelled by <user> at
<time>." (annotate.services.jobs' words and refusals), who and when kept in ``cancelled_by`` and ``cancelled_at`` as
a judge run's are (the pages and the API read those; the line is for people reading the notes). A
worker that picks it up later asks the writer nothing (execute_synthetic_set only starts a queued or running set);
one writing it stops at its next progress write (rewrite._record_progress raises SetCancelled), keeping every
rewrite it stored, the answer that write followed included: they were paid for.

A cancelled set can be resumed as a failed one can (Resume on its page, which drops the cancel's line and clears both
columns): it goes on where it stopped and asks only for the rewrites it lacks. The rewrites belong to the set and its
name is the project's, so a set that could not be resumed would leave what was paid for unusable and its name taken;
an admin who cancelled because no worker ran resumes it once one does, and one who cancelled to stop paying simply
does not.
"""

from __future__ import annotations

import logging

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from annotate.services.interrupt import command_canceller
from annotate.services.jobs import CancelRefused, cancelled_message, ended_in_words
from judging.models import SyntheticRewrite, SyntheticSet

logger = logging.getLogger(__name__)


class SetCancelled(Exception):
    """Raised inside an execution whose set was cancelled meanwhile: it stops, keeping what it stored."""


def cancel_synthetic_set(synthetic_set: SyntheticSet, user: AbstractBaseUser) -> SyntheticSet:
    """Mark a queued or running set failed, its notes ending "Cancelled by <user> at <time>.", with ``cancelled_by``
    and ``cancelled_at``; returns it, updated.

    The row is locked while it is read and written, so a cancel that comes while the set's execution writes its
    outcome (its items and "done") waits for it, and is then refused. Raises annotate's CancelRefused, changing
    nothing, when the set has already ended.
    """
    return _cancel(synthetic_set, user.get_username(), user)


def cancel_synthetic_set_from_command(synthetic_set: SyntheticSet, command: str) -> SyntheticSet:
    """Cancel a set that a command writing it in the foreground was told to stop (Ctrl-C): as
    :func:`cancel_synthetic_set`, its notes ending "Cancelled by command (Ctrl-C in manage.py <command>) at <time>.",
    with no ``cancelled_by`` (a command has no user; canceller_name reads who from that line)."""
    return _cancel(synthetic_set, command_canceller(command), None)


def _cancel(synthetic_set: SyntheticSet, who: str, user: AbstractBaseUser | None) -> SyntheticSet:
    with transaction.atomic():
        locked = SyntheticSet.objects.select_for_update().get(pk=synthetic_set.pk)
        if not locked.cancellable:
            raise CancelRefused(ended_in_words(locked, _finished_in_words, noun="Set", reason=locked.stop_reason))
        now = timezone.now()
        locked.status = SyntheticSet.Status.FAILED
        # Below the notes on the outputs it skipped, which stay.
        locked.error = "\n".join(line for line in (locked.error, cancelled_message(who, now)) if line)
        locked.cancelled_by = user
        locked.cancelled_at = now
        locked.save(update_fields=["status", "error", "cancelled_by", "cancelled_at"])
    logger.info("synthetic set %s of project %s cancelled by %s (%s of %s rewrites)", locked.pk, locked.project_id,
                who, locked.done, locked.total)
    for name in ("status", "error", "cancelled_by", "cancelled_at", "done"):
        setattr(synthetic_set, name, getattr(locked, name))
    return synthetic_set


def kept_in_words(synthetic_set: SyntheticSet) -> str:
    """What a cancelled set keeps, for the page's message: "the 12 rewrites it stored stay"."""
    stored = synthetic_set.rewrites.count()
    if not stored:
        return "it had stored no rewrite"
    return f"the {stored} rewrite{'' if stored == 1 else 's'} it stored stay"


def _finished_in_words(synthetic_set: SyntheticSet) -> str:
    written = synthetic_set.rewrites.filter(status=SyntheticRewrite.Status.OK).count()
    return f"{written} of {synthetic_set.total} rewrites written"
