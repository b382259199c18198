"""Time measured by the server between two moments of its own clock (a pair item's serve and answer, an audit's)."""

from __future__ import annotations

from datetime import datetime


def elapsed_seconds(start: datetime, end: datetime) -> float | None:
    """Seconds from ``start`` to ``end``, or None (not known) when the server clock went back in between (NTP, a
    restored VM): a 0 would pass for the fastest answer there is and feed the speed figures and flags, which count
    known times only."""
    seconds = (end - start).total_seconds()
    return seconds if seconds >= 0 else None
