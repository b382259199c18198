"""The figures the agreement and results pages show: kept in the database, served stale while they refresh.

Every number comes from annotate.services.stats (its page figure sets,
``FIGURE_SETS`` below); this module decides when to compute them. The
management commands call stats directly and always get fresh numbers.

Figures that must never be stale (the results and agreement APIs, the curation
list, a pairs project's agreement) go through ``current_figures`` instead: the
kept set is served only when its version is the current one, else they are
computed in the request and kept, so the second request of unchanged data
reads one row instead of every span (or pair judgement) again.

Why: at 100,000 samples a figure set takes one to a few seconds to compute,
and during a live campaign the data changes with every span save, so a cache
keyed by the data alone would almost never be warm. Instead each page query
keeps its last figures in a ``FigureSet`` row, which every process (web
servers, the Celery worker) reads and writes:

- figures of the current data version: served as they are;
- figures of an older version: served at once, with their age, and a refresh
  is queued (``refresh_figure_set`` in a Celery task; at most one queued or
  running per query, by a lock on the row) unless recomputing is cheap (the
  last computation took under ``settings.FIGURES_SYNC_MS``), in which case
  they are recomputed in the request;
- no figures yet: computed in the request.

The *data version* is a fingerprint of every row the figures depend on, read
with a handful of cheap aggregate queries (indexed, about a millisecond each
at 100,000 samples):

- spans: count, highest id (a new or deleted span) and latest ``updated_at``
  (an edited label; indexed);
- assignments: count, highest id, the id sums of the submitted, of the
  re-opened and of the excluded-from-agreement ones, latest ``submitted_at`` (a
  submission, a re-opening, an admin exclusion);
- gold labels (the curation list): count, highest id, latest ``decided_at``;
- samples and batches: count and highest id (imports, copies, deletions);
- judge judgements: count and highest id, and the project's judges' ids, names and kinds (the judges are
  detectors too, named by their names);
- the project's taxonomy (it decides which label counts as what);
- a pairs project's rounds and items (count, highest id) and pair judgements
  (count, highest id, how many are answered, the id sum of the counted ones, latest
  ``answered_at``: a serve, an answer, a taken-back answer, a judge blocked or
  unblocked), in place of the gold labels' part, which only span projects
  read.

The counts are global, not per project, because a global count is answered
from an index while a per-project one joins tables; a change in another
project only costs a refresh. What the fingerprint does not see (a renamed
batch or user, a sample's metadata edited in the Django admin) shows after
the next change it does see.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import Count, Max, Q, Sum
from django.utils import timezone

from annotate.models import (
    Assignment,
    Batch,
    FigureSet,
    GoldLabel,
    PairItem,
    PairJudgement,
    PairRound,
    Project,
    Sample,
    SpanAnnotation,
)
from annotate.services import stats
from judging.models import Judge, Judgement

logger = logging.getLogger(__name__)

# Part of every data version: raise it when the figures' shape or rules change, so figures kept by older code
# are recomputed rather than served as current (2: detectors count missing apart from invalid, with a rule; 3:
# detectors listed by name, not in the metadata's key order; 4: a batch-mean alpha counts the batches it averages
# and leaves out; 5: token alpha counts each character of Chinese, Japanese, Thai... as a unit).
FIGURES_FORMAT = 5

def _curation_figures(project: Project, round: int) -> dict[str, Any]:
    from annotate.services import curation  # imports this module

    return curation.curation_figures(project, round)


def _pair_agreement(project: Project, round_number: int | None) -> dict[str, Any]:
    from annotate.services.pairs import agreement  # imports this module

    return agreement.pair_agreement(project, round_number)


FIGURE_SETS: dict[str, Callable[..., dict[str, Any]]] = {
    "results": stats.results_figures,
    "agreement": stats.agreement_figures,
    "spans": stats.span_figures,
    # Served by current_figures only (never stale): the APIs, the curation list, a pairs project's agreement.
    "api-agreement": stats.project_agreement,
    "api-halu-rates": stats.explained_halu_rates,
    "api-detector-eval": stats.explained_detector_eval,
    "curation": _curation_figures,
    "pair-agreement": _pair_agreement,
}


def data_version(project: Project) -> str:
    """Fingerprint of the rows the project's figures are computed from (see the module docstring)."""
    assignments = Assignment.objects.aggregate(
        count=Count("id"),
        top=Max("id"),
        submitted=Sum("id", filter=Q(status=Assignment.Status.SUBMITTED)),
        reopened=Sum("id", filter=Q(reopened=True)),
        excluded=Sum("id", filter=Q(excluded_from_agreement=True)),
        last=Max("submitted_at"),
    )
    parts = [
        FIGURES_FORMAT,
        project.pk,
        json.dumps(project.taxonomy, sort_keys=True, default=str),
        SpanAnnotation.objects.count(),  # separate queries: each is answered from an index
        SpanAnnotation.objects.aggregate(top=Max("id"))["top"],
        str(SpanAnnotation.objects.aggregate(edited=Max("updated_at"))["edited"]),
        *assignments.values(),
        Sample.objects.count(),
        Sample.objects.aggregate(top=Max("id"))["top"],
        Batch.objects.count(),
        Batch.objects.aggregate(top=Max("id"))["top"],
        # Judges feed the detector evaluation (judging.services.detectors); judgements are written, not edited. The
        # judges' names name the detectors ("judge:<name>"), and a judge can be renamed.
        Judgement.objects.count(),
        Judgement.objects.aggregate(top=Max("id"))["top"],
        list(Judge.objects.filter(project=project).order_by("pk").values_list("pk", "name", "kind")),
        *(_pair_parts() if project.kind == Project.Kind.PAIRS else _gold_parts()),
    ]
    return hashlib.sha1(repr(parts).encode("utf-8"), usedforsecurity=False).hexdigest()


def _gold_parts() -> list[Any]:
    """The gold labels' part of a span project's data version (the curation list shows them and their staleness)."""
    gold = GoldLabel.objects.aggregate(count=Count("id"), top=Max("id"), decided=Max("decided_at"))
    return [gold["count"], gold["top"], str(gold["decided"])]


def _pair_parts() -> list[Any]:
    """A pairs project's part of its data version: what its agreement figures rest on.

    Pair judgements are edited in place (answered, taken back, un-counted when
    their judge is blocked), so besides the count and highest id the version
    holds how many are answered and counted and the latest answer time.
    """
    judgements = PairJudgement.objects.aggregate(
        count=Count("id"),
        top=Max("id"),
        answered=Count("id", filter=Q(answered_at__isnull=False)),
        counted=Sum("id", filter=Q(counted=True)),  # a sum, not a count: one judge blocked and another unblocked
        last=Max("answered_at"),
    )
    items = PairItem.objects.aggregate(count=Count("id"), top=Max("id"))
    rounds = PairRound.objects.aggregate(count=Count("id"), top=Max("id"))
    return [*judgements.values(), *items.values(), *rounds.values()]


@dataclass
class ServedFigures:
    """Figures as a page shows them, with how fresh they are."""

    value: dict[str, Any]
    version: str  # the data version they were computed from
    computed_at: datetime
    fresh: bool  # computed from the current data
    refreshing: bool  # stale, and a refresh is queued or running

    @property
    def age_seconds(self) -> float:
        return max(0.0, (timezone.now() - self.computed_at).total_seconds())


def _key(kind: str, query: dict[str, Any]) -> str:
    text = json.dumps([kind, query], sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _check_kind(kind: str) -> None:
    if kind not in FIGURE_SETS:
        raise ValueError(f"unknown figure set {kind!r}; use one of {', '.join(FIGURE_SETS)}")


def serve_figures(project: Project, kind: str, **query: Any) -> ServedFigures:
    """The figures of one page query: kept ones when current, else stale ones while a refresh runs, else new ones.

    ``query`` holds the arguments of the stats figure set (JSON values).
    """
    _check_kind(kind)
    query = json.loads(json.dumps(query))  # as it is stored: lists, not tuples
    version = data_version(project)
    kept = FigureSet.objects.filter(project=project, key=_key(kind, query)).first()
    if kept is not None and kept.version == version:
        return ServedFigures(json.loads(kept.value), kept.version, kept.computed_at, fresh=True, refreshing=False)
    if kept is not None and kept.compute_seconds * 1000 >= settings.FIGURES_SYNC_MS:
        request_refresh(kept)
        return ServedFigures(json.loads(kept.value), kept.version, kept.computed_at, fresh=False, refreshing=True)
    stored = compute_figure_set(project, kind, query, version)
    return ServedFigures(json.loads(stored.value), stored.version, stored.computed_at, fresh=True, refreshing=False)


def current_figures(project: Project, kind: str, **query: Any) -> dict[str, Any]:
    """The figures of one query as of the current data: the kept set when its version is the current one, else
    computed now and kept. Never stale, unlike ``serve_figures``; the value is always read back from its JSON text,
    so a kept answer and a new one have the same shape (string keys, lists for tuples)."""
    _check_kind(kind)
    query = json.loads(json.dumps(query))
    version = data_version(project)
    kept = FigureSet.objects.filter(project=project, key=_key(kind, query), version=version).values_list(
        "value", flat=True
    )
    for value in kept:
        return json.loads(value)
    return json.loads(compute_figure_set(project, kind, query, version).value)


def compute_figure_set(project: Project, kind: str, query: dict[str, Any], version: str | None = None) -> FigureSet:
    """Compute a figure set with stats and keep it, unless figures read later are already kept.

    The data version is read before the rows, so a change made while
    computing leaves the kept figures stale, never wrongly current.
    """
    _check_kind(kind)
    if version is None:
        version = data_version(project)
    started = timezone.now()
    clock = time.perf_counter()
    value = FIGURE_SETS[kind](project, **query)
    fields = {
        "kind": kind,
        "query": query,
        "version": version,
        "value": json.dumps(value),
        "computed_at": started,
        "compute_seconds": time.perf_counter() - clock,
    }
    key = _key(kind, query)
    try:
        kept = FigureSet.objects.filter(project=project, key=key)
        if not kept.filter(computed_at__lte=started).update(**fields) and not kept.exists():
            try:
                with transaction.atomic():
                    FigureSet.objects.create(project=project, key=key, **fields)
            except IntegrityError:
                pass  # another process kept the same query meanwhile
            _prune(project, kind)
    except DatabaseError as error:
        # Keeping them is a saving, not the answer: a locked or full database must not turn a read into an error.
        logger.warning("figures of %s (%s) computed but not kept: %s", project.pk, kind, error)
    return FigureSet(project=project, key=key, **fields)


# The kinds the pages serve stale while they refresh; the others are served by current_figures only. Each group is
# pruned apart, so that many API queries (a threshold sweep) never push the pages' figures out.
PAGE_KINDS = ("results", "agreement", "spans")


def _prune(project: Project, kind: str) -> None:
    """Keep the most recently computed sets of a project (each distinct query makes one), in kind's group."""
    group = Q(kind__in=PAGE_KINDS) if kind in PAGE_KINDS else ~Q(kind__in=PAGE_KINDS)
    old = FigureSet.objects.filter(group, project=project).order_by("-computed_at").values_list("pk", flat=True)
    stale_ids = list(old[settings.FIGURES_KEPT_PER_PROJECT :])
    if stale_ids:
        FigureSet.objects.filter(pk__in=stale_ids).delete()


def request_refresh(figure_set: FigureSet) -> bool:
    """Queue a refresh of these figures unless one is queued or running; True when this call queued it.

    The lock is ``refresh_queued_at``, taken by a conditional UPDATE so that
    of many requests at once only one queues the task; it runs out after
    ``settings.FIGURES_REFRESH_LOCK_SECONDS`` (a worker that died).
    """
    now = timezone.now()
    expired = now - timedelta(seconds=settings.FIGURES_REFRESH_LOCK_SECONDS)
    taken = (
        FigureSet.objects.filter(pk=figure_set.pk)
        .filter(Q(refresh_queued_at__isnull=True) | Q(refresh_queued_at__lt=expired))
        .update(refresh_queued_at=now)
    )
    if not taken:
        return False
    transaction.on_commit(lambda: _queue_refresh(figure_set.pk, now))
    return True


def _queue_refresh(figure_set_id: int, locked_at: datetime) -> None:
    from annotate.tasks import refresh_figures

    try:
        refresh_figures.delay(figure_set_id)
    except Exception:  # the broker is down: the page still shows the kept figures; the next view tries again
        logger.exception("could not queue a refresh of figure set %s", figure_set_id)
        FigureSet.objects.filter(pk=figure_set_id, refresh_queued_at=locked_at).update(refresh_queued_at=None)


def refresh_figure_set(figure_set_id: int) -> None:
    """Recompute a kept figure set if the data changed, then release its refresh lock (the Celery task's work).

    Idempotent: run twice, the second run finds the figures current. A query
    that no longer makes sense (its round is gone) drops the set; the page
    then computes and explains it.
    """
    kept = FigureSet.objects.select_related("project").filter(pk=figure_set_id).first()
    if kept is None:
        return
    try:
        version = data_version(kept.project)
        if kept.version != version:
            compute_figure_set(kept.project, kept.kind, kept.query, version)
    except ValueError:
        logger.warning("figure set %s no longer computes; dropped", figure_set_id, exc_info=True)
        FigureSet.objects.filter(pk=figure_set_id).delete()
    finally:
        FigureSet.objects.filter(pk=figure_set_id).update(refresh_queued_at=None)
