"""The figures the agreement and results pages and the results API show, cached.

Every number comes from annotate.services.stats (or, for the few views stats
does not offer yet, from stats' row readers fed to the pure modules
annotate.agreement and annotate.results, in the functions at the bottom of
this module). This module adds one thing: a short-lived cache, so that a page
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
from collections import Counter, defaultdict
from collections.abc import Callable
from functools import cached_property
from typing import Any, TypeVar

from django.core.cache import cache
from django.db.models import Count, Max, Q, Sum

from annotate import agreement, results
from annotate.agreement import CATEGORIES
from annotate.models import Assignment, Batch, Passage, Project, Sample, SpanAnnotation
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

    # ------------------------------------------------------------------ views stats does not offer yet

    def worst_label_distribution(self, round: int) -> dict[str, dict[str, int]]:
        return self._cached("distribution", (round,), lambda: worst_label_distribution(self.project, round))

    def span_agreement(self, scheme: str, round: int) -> dict[str, Any]:
        return self._cached(
            "spans", (agreement.parse_scheme(scheme).text, round), lambda: span_agreement(self.project, scheme, round)
        )

    def challenging_groups(self, k: int, threshold: float) -> dict[str, Any]:
        return self._cached(
            "challenging", (k, float(threshold)), lambda: challenging_groups(self.project, k, threshold)
        )

    def batch_disputes(self, batch: Batch, round: int, scheme: str) -> dict[str, Any]:
        return self._cached(
            "disputes",
            (batch.pk, round, agreement.parse_scheme(scheme).text),
            lambda: batch_disputes(self.project, batch, round, scheme),
        )


# --------------------------------------------------------------------------- compositions
# Candidates for annotate/services/stats.py: they read rows through stats and
# compute with the pure modules, as stats' own functions do.


def worst_label_distribution(project: Project, round: int = 1) -> dict[str, dict[str, int]]:
    """``{generator: {"n", "C", "B", "Q", "U"}}``: how many samples got each worst label (all submitters)."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for verdict in stats.sample_worst_labels(project, round):
        counts[verdict.generator][verdict.category] += 1
    return {
        generator: {"n": sum(counts[generator].values())} | {category: counts[generator][category] for category in CATEGORIES}
        for generator in sorted(counts)
    }


def span_agreement(project: Project, scheme: str = "C|B|Q|U", round: int = 1) -> dict[str, Any]:
    """Pairwise span F1 (exact and overlap, overall and per label) and token-level alpha under the scheme."""
    parsed = agreement.parse_scheme(scheme)
    batches = stats.batch_spans(project, round)
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    for mode in agreement.SPAN_MODES:
        for entry in agreement.pairwise_span_f1(batches, mode):
            first, second = entry["annotators"]
            pair = pairs.setdefault((first, second), {"annotators": [first, second]})
            pair[mode] = {"overall": entry["overall"], "per_label": entry["per_label"]}
    labels = sorted(
        {label for pair in pairs.values() for mode in agreement.SPAN_MODES for label in pair[mode]["per_label"]},
        key=lambda label: -CATEGORIES.index(label) if label in CATEGORIES else 0,
    )
    token = agreement.token_alpha(batches, parsed).as_dict()
    return {"scheme": parsed.text, "round": round, "labels": labels, "pairs": list(pairs.values()),
            "token_alpha": token}


def challenging_groups(project: Project, k: int = 7, threshold: float = 0.5) -> dict[str, Any]:
    """FaithBench's selection over every sample of the project (annotated or not): detectors disagree.

    Passage groups ranked by their number of challenging samples, keeping
    those with at least k. A (generator, summary) that occurs more than once
    in a passage (copied into a later batch) counts once.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive whole number, not {k!r}")
    rows = (
        Sample.objects.filter(project=project)
        .order_by("passage_id", "batch__position", "batch_id", "position", "id")
        .values_list("id", "passage_id", "generator", "summary", "metadata")
    )
    metadata_by_sample: dict[int, dict[str, Any]] = {}
    passage_of: dict[int, int] = {}
    seen: set[tuple[int, str, str]] = set()
    for sample_id, passage_id, generator, summary, metadata in rows.iterator(chunk_size=10000):
        if (passage_id, generator, summary) in seen:
            continue
        seen.add((passage_id, generator, summary))
        metadata_by_sample[sample_id] = metadata if isinstance(metadata, dict) else {}
        passage_of[sample_id] = passage_id
    detectors = results.detector_keys(metadata_by_sample.values())
    groups: dict[int, dict[int, dict[str, Any]]] = defaultdict(dict)
    for sample_id, metadata in metadata_by_sample.items():
        groups[passage_of[sample_id]][sample_id] = {detector: metadata.get(detector) for detector in detectors}
    kept = results.challenging_groups(groups, k, threshold) if len(detectors) >= 2 else []
    names = dict(
        Passage.objects.filter(pk__in=[entry["group"] for entry in kept]).values_list("pk", "external_id")
    )
    return {
        "k": k,
        "threshold": float(threshold),
        "detectors": detectors,
        "groups_total": len(groups),
        "kept": [
            {"passage_id": entry["group"], "passage": names.get(entry["group"], str(entry["group"])),
             "challenging": entry["challenging"], "samples": entry["samples"]}
            for entry in kept
        ],
    }


def batch_disputes(project: Project, batch: Batch, round: int, scheme: str = "C|B|Q|U") -> dict[str, Any]:
    """Samples of one batch on which the agreement annotators' worst labels differ under the scheme.

    A label the scheme drops is a missing value and cannot disagree; merged
    categories (C+B) agree with each other. Each disputed sample lists every
    annotator's worst label (C when they left no span).
    """
    parsed = agreement.parse_scheme(scheme)
    found = next((entry for entry in stats.batch_labels(project, round) if entry.name == batch.name), None)
    if found is None:
        return {"batch": batch.name, "round": round, "scheme": parsed.text, "annotators": [], "samples": 0,
                "disputed": [], "reason": f"nobody submitted batch {batch.name!r} in round {round}"}
    disputed = []
    for sample_id in found.samples:
        labels = {annotator: found.labels.get((annotator, sample_id), "C") for annotator in found.annotators}
        values = {parsed[category] for category in labels.values()} - {None}
        if len(values) > 1:
            disputed.append({"sample_id": sample_id, "labels": labels})
    reason = "only one annotator counts for agreement" if len(found.annotators) < 2 else None
    return {"batch": batch.name, "round": round, "scheme": parsed.text, "annotators": list(found.annotators),
            "samples": len(found.samples), "disputed": disputed, "reason": reason}
