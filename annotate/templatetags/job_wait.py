"""``{% load job_wait %}``: how long background work has waited, for progress rows that no view prepares (judge runs,
synthetic sets): ``{% with wait=run|job_wait %}{% if wait.no_worker %}...``."""

from __future__ import annotations

from typing import Any

from django import template

from annotate.services.jobs import JobWait, job_wait

register = template.Library()


@register.filter(name="job_wait")
def job_wait_filter(work: Any) -> JobWait | None:
    """annotate.services.jobs.job_wait of a queued or running Progress row; None once it has ended."""
    return job_wait(work) if work is not None and hasattr(work, "created_at") else None
