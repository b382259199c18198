"""The audit queue's one clock: serving and answering read ``now()`` here, and tests move it
(``monkeypatch.setattr(audits.clock, "now", ...)``)."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone


def now() -> datetime:
    """The server clock for serving and answering (tests replace it)."""
    return timezone.now()
