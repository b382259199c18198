"""Who cancelled a piece of the judging app's background work and when: the two columns judge runs and synthetic
sets share, and how the pages and the API read them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotate.models.core import Progress
from annotate.services.interrupt import COMMAND_CANCELLER, command_canceller  # noqa: F401 - judging's name for it


class CancellableProgress(Progress):
    """Progress an admin can cancel (judging.services.runs.cancel_run, judging.services.synthetic.cancel_synthetic_set).

    A cancelled row is stored as failed, so every status filter treats it as one; these columns say who cancelled it
    and when, for the pages, the API and ``status_label``. ``cancelled_at`` alone marks it cancelled:
    ``cancelled_by`` becomes null when that user is deleted. The "Cancelled by <user> at <time>." line of its
    ``error`` is for people reading the text; nothing reads it back.
    """

    cancelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    cancelled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    @property
    def cancelled(self) -> bool:
        """Whether it was cancelled (it is stored as failed, with ``cancelled_at`` set)."""
        return self.status == self.Status.FAILED and self.cancelled_at is not None

    @property
    def canceller_name(self) -> str:
        """Who cancelled it, as the pages and the API name them: the username, "command (Ctrl-C in manage.py
        judge)" for a command told to stop (command_canceller: no user, so its message says who), or "a deleted
        user"."""
        if not self.cancelled:
            return ""
        if self.cancelled_by is not None:
            return self.cancelled_by.get_username()
        # The cancel's line is the last of the message (a synthetic set's notes on skipped outputs come before it).
        said = (self.error.splitlines() or [""])[-1].removeprefix("Cancelled by ")
        if said.startswith(f"{COMMAND_CANCELLER} ("):
            return said.rsplit(" at ", 1)[0]
        return "a deleted user"
