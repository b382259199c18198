"""The figures the agreement and results pages and the results API show, cached.

Every number comes from annotate.services.stats. This module adds one thing: a short-lived cache, so that a page
over 100,000 samples does not recompute seconds of statistics on every view.

The cache key is the project plus a *data version*: a fingerprint of every
row the figures depend on, read with a handful of cheap aggregate queries on
each request (about a millisecond each at 100,000 samples):

- spans: count and highest id (a new or deleted span changes them), and the
  latest ``updated_at`` (an edited label). That last one needs a scan of the
  span table (~90 ms at 160,000 spans on SQLite), so it is itself remembered
  for EDIT_STAMP_SECONDS: an edit of an existing span's labels shows on the
  pages within that many seconds; everything else shows at once;
- assignments: count, highest id, the id sums of the submitted and of the
  excluded-from-agreement ones, latest ``submitted_at`` (a submission, a
  re-opening, an admin exclusion);
- samples and batches: count and highest id (imports, copies, deletions);
- the project's taxonomy (it decides which label counts as what).

The row counts are global, not per project, because a global count is
answered from an index while a per-project one joins tables; a change in
another project only costs a recomputation. What the fingerprint does not
see (a renamed batch or user, a sample's metadata edited in the Django
admin) shows after ``CACHE_SECONDS`` at the latest.

Django's cache framework holds the values (LocMemCache by default, so each
process has its own; point CACHES at Redis to share). Errors are never
cached. Nothing is kept in module globals.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from functools import cached_property
from typing import Any, TypeVar

from django.core.cache import cache
from django.db.models import Count, Max, Q, Sum

from annotate import agreement
from annotate.models import Assignment, Batch, Project, Sample, SpanAnnotation
from annotate.services import stats

CACHE_SECONDS = 300
EDIT_STAMP_SECONDS = 5
KEY_PREFIX = "faithlab:figures"
T = TypeVar("T")


def _span_edit_stamp() -> str:
    """Latest span ``updated_at``, remembered for EDIT_STAMP_SECONDS (reading it scans the span table)."""
    key = f"{KEY_PREFIX}:span-edit-stamp"
    stamp = cache.get(key)
    if stamp is None:
        stamp = str(SpanAnnotation.objects.aggregate(edited=Max("updated_at"))["edited"])
        cache.set(key, stamp, EDIT_STAMP_SECONDS)
    return stamp


def data_version(project: Project) -> str:
    """Fingerprint of the rows the project's figures are computed from (see the module docstring)."""
    assignments = Assignment.objects.aggregate(
        count=Count("id"),
        top=Max("id"),
        submitted=Sum("id", filter=Q(status=Assignment.Status.SUBMITTED)),
        excluded=Sum("id", filter=Q(excluded_from_agreement=True)),
        last=Max("submitted_at"),
    )
    parts = [
        project.pk,
        json.dumps(project.taxonomy, sort_keys=True, default=str),
        SpanAnnotation.objects.count(),  # separate queries: a bare count is answered from an index
        SpanAnnotation.objects.aggregate(top=Max("id"))["top"],
        _span_edit_stamp(),
        *assignments.values(),
        Sample.objects.count(),
        Sample.objects.aggregate(top=Max("id"))["top"],
        Batch.objects.count(),
        Batch.objects.aggregate(top=Max("id"))["top"],
    ]
    return hashlib.sha1(repr(parts).encode("utf-8"), usedforsecurity=False).hexdigest()


class ProjectFigures:
    """The project's figures for one request: the data version is read once, on first use."""

    def __init__(self, project: Project) -> None:
        self.project = project

    @cached_property
    def version(self) -> str:
        return data_version(self.project)

    def _cached(self, name: str, arguments: tuple[Any, ...], compute: Callable[[], T]) -> T:
        digest = hashlib.sha1(repr(arguments).encode("utf-8"), usedforsecurity=False).hexdigest()
        key = f"{KEY_PREFIX}:{self.project.pk}:{self.version}:{name}:{digest}"
        found = cache.get(key)
        if found is not None:
            return found[0]
        value = compute()
        cache.set(key, (value,), CACHE_SECONDS)  # wrapped, so a cached None is told apart from a miss
        return value

    # ------------------------------------------------------------------ straight from stats

    def rounds(self) -> list[int]:
        return self._cached("rounds", (), lambda: stats.project_rounds(self.project))

    def agreement(
        self, scheme: str, level: str, aggregate: str, round: int, *, bootstrap: int = 0, seed: int = 0
    ) -> dict[str, Any]:
        """stats.project_agreement, the agreement command's JSON."""
        return self._cached(
            "agreement",
            (agreement.parse_scheme(scheme).text, level, aggregate, round, bootstrap, seed),
            lambda: stats.project_agreement(
                self.project, scheme, level, aggregate, round, bootstrap=bootstrap, seed=seed
            ),
        )

    def pairwise_alpha(self, scheme: str, level: str, round: int) -> list[dict[str, Any]]:
        return self._cached(
            "pairwise",
            (agreement.parse_scheme(scheme).text, level, round),
            lambda: stats.project_pairwise_alpha(self.project, scheme, level, round),
        )

    def halu_rates(self, round: int) -> dict[str, dict[str, Any]]:
        """stats.project_halu_rates, the halu_rates command's JSON."""
        return self._cached("halu", (round,), lambda: stats.project_halu_rates(self.project, round))

    def detector_eval(self, threshold: float, round: int) -> dict[str, dict[str, Any]]:
        """stats.project_detector_eval, the detector_eval command's JSON."""
        return self._cached(
            "detectors", (float(threshold), round), lambda: stats.project_detector_eval(self.project, threshold, round)
        )


    def worst_label_distribution(self, round: int) -> dict[str, dict[str, int]]:
        return self._cached("distribution", (round,), lambda: stats.worst_label_distribution(self.project, round))

    def span_agreement(self, scheme: str, round: int) -> dict[str, Any]:
        return self._cached(
            "spans", (agreement.parse_scheme(scheme).text, round), lambda: stats.span_agreement(self.project, scheme, round)
        )

    def challenging_groups(self, k: int, threshold: float) -> dict[str, Any]:
        return self._cached(
            "challenging", (k, float(threshold)), lambda: stats.challenging_groups(self.project, k, threshold)
        )

    def batch_disputes(self, batch: Batch, round: int, scheme: str) -> dict[str, Any]:
        return self._cached(
            "disputes",
            (batch.pk, round, agreement.parse_scheme(scheme).text),
            lambda: stats.batch_disputes(self.project, batch, round, scheme),
        )
