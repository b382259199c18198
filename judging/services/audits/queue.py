"""Serving: the next flagged item for an auditor, worst first (or shuffled, as they choose), one serve at a time, a
slot held for SERVE_MINUTES; the served item's clock standing still while its auditor changes a saved verdict; and an
auditor's progress through the queue (see the package docstring)."""


from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Count, ExpressionWrapper, F, FloatField, OuterRef, Q, Subquery, Value
from django.db.models.functions import Cast, Coalesce

from annotate.models import Project
from judging.models import Audit, AuditItem, JudgingSettings
from judging.services.audits import clock
from judging.services.audits.auditors import check_auditor, judging_settings_of
from judging.services.audits.view import latest_sample_judgements, shown_judgement

# An unanswered serve keeps its slot this long (as a pairs serve does); then the slot may go to another auditor.
SERVE_MINUTES = 30

# The orders an auditor may take the queue in: worst first (the default: the flagging figure ascending), or shuffled,
# a fixed order of their own that says nothing of the flag (a blind auditor is not told "this one is bad" by its place).
WORST_FIRST, SHUFFLED = "worst", "shuffled"
QUEUE_ORDERS = (WORST_FIRST, SHUFFLED)
CANDIDATES = 50  # open items tried in order per serve (another auditor may take some meanwhile)


def _holding_a_slot(moment: datetime) -> Q:
    """Audits that count against an item's audits_per_item: answered, or served within SERVE_MINUTES."""
    return Q(answered_at__isnull=False) | Q(served_at__gte=moment - timedelta(minutes=SERVE_MINUTES))


def _open_items(project: Project, auditor: Any, settings: JudgingSettings) -> Any:
    """Items the auditor may be served now, worst first."""
    taken = (
        Audit.objects.filter(_holding_a_slot(clock.now()), item=OuterRef("pk"))
        .order_by().values("item").annotate(n=Count("pk")).values("n")[:1]
    )
    figure = Coalesce(
        Cast("flagged_by__score", FloatField()),
        ExpressionWrapper(Value(1.0) + Value(4.0) * F("flagged_by__probability"), output_field=FloatField()),
    )
    return (
        AuditItem.objects.filter(project=project)
        .exclude(audits__auditor=auditor)
        .annotate(taken=Coalesce(Subquery(taken), 0), flag_figure=figure)
        .filter(taken__lt=settings.audits_per_item)
        .order_by(F("flag_figure").asc(nulls_last=True), "id")
    )


def shuffle_key(auditor_id: int, item_id: int) -> bytes:
    """An item's place in the auditor's shuffled queue: a hash of the two ids, so the order is the same at every serve
    (an item keeps its place; one flagged later falls somewhere among them), differs from auditor to auditor, and owes
    nothing to the flag's figure."""
    return hashlib.sha256(f"faithlab audit order {auditor_id} {item_id}".encode()).digest()


def _candidates(project: Project, auditor: Any, settings: JudgingSettings, order: str) -> list[int]:
    """The ids of the first CANDIDATES items the auditor may be served now, in their queue order."""
    open_items = _open_items(project, auditor, settings)
    if order == SHUFFLED:
        ids = open_items.order_by().values_list("pk", flat=True)
        return sorted(ids, key=lambda pk: shuffle_key(auditor.pk, pk))[:CANDIDATES]
    return list(open_items.values_list("pk", flat=True)[:CANDIDATES])


def _held(project: Project, auditor: Any) -> Audit | None:
    return (
        Audit.objects.filter(item__project=project, auditor=auditor, answered_at__isnull=True)
        .select_related("item__sample__passage", "item__flagged_by", "judgement")
        .order_by("served_at", "id")
        .first()
    )


def serve_next_audit(project: Project, auditor: Any, *, order: str = WORST_FIRST) -> Audit | None:
    """The auditor's item: the one they hold unanswered, else the first open one in ``order`` (QUEUE_ORDERS: the
    worst, or the first of their shuffled queue; served now), else None. The order chooses only a new serve: an item
    held stays theirs whatever the order."""
    if order not in QUEUE_ORDERS:
        raise ValueError(f"order must be one of {', '.join(QUEUE_ORDERS)}, not {order!r}")
    check_auditor(project, auditor)
    settings = judging_settings_of(project)
    with transaction.atomic():
        # One serve at a time per auditor, even from two tabs: their user row is the lock.
        list(get_user_model().objects.select_for_update().filter(pk=auditor.pk).values_list("pk"))
        held = _held(project, auditor)
        if held is not None:
            # Show the current explanation (an explainer may have answered since): agree takes what is shown.
            current = shown_judgement(held.item, latest_sample_judgements(held.item.sample), settings)
            if current is not None and current.pk != held.judgement_id:
                held.judgement = current
                held.save(update_fields=["judgement"])
            return held
        for candidate in _candidates(project, auditor, settings, order):
            # Another auditor may be taking the last slot: lock the item, then count again.
            # of=("self",): PostgreSQL locks no row on the nullable side of the flagged_by join.
            item = (
                AuditItem.objects.select_for_update(of=("self",))
                .select_related("sample__passage", "flagged_by")
                .get(pk=candidate)
            )
            moment = clock.now()
            if item.audits.filter(_holding_a_slot(moment)).count() >= settings.audits_per_item:
                continue
            # Stale serves on this item give their slots up now (their auditors walked away).
            item.audits.filter(answered_at__isnull=True).exclude(_holding_a_slot(moment)).delete()
            judgement = shown_judgement(item, latest_sample_judgements(item.sample), settings)
            try:
                with transaction.atomic():
                    return Audit.objects.create(item=item, auditor=auditor, judgement=judgement, served_at=moment)
            except IntegrityError:  # served to this auditor by a request that won the race
                continue
    return None


# --------------------------------------------------------------------------- the clock while changing a verdict


@dataclass(frozen=True)
class ClockPause:
    """The served item's clock standing still while its auditor changes a saved verdict on the audit page.

    ``audit``: the serve it stopped; ``since``: when; ``start``: that serve's ``served_at`` then. A resume moves
    ``served_at`` only while it is still ``start``, so a pause counts once however often it is sent back (a stale
    copy of the session, two tabs) and never after the serve's clock moved on without it."""

    audit: int
    since: datetime
    start: datetime

    def as_json(self) -> dict[str, Any]:
        """For the session (JSON): the moments as ISO 8601 text."""
        return {"audit": self.audit, "since": self.since.isoformat(), "start": self.start.isoformat()}

    @classmethod
    def from_json(cls, raw: Any) -> ClockPause | None:
        """A pause as :meth:`as_json` wrote it; None for anything else (an old or damaged session entry)."""
        if not isinstance(raw, dict) or isinstance(raw.get("audit"), bool) or not isinstance(raw.get("audit"), int):
            return None
        try:
            since, start = datetime.fromisoformat(raw["since"]), datetime.fromisoformat(raw["start"])
        except (KeyError, TypeError, ValueError):
            return None
        if since.tzinfo is None or start.tzinfo is None:
            return None
        return cls(audit=raw["audit"], since=since, start=start)


def pause_item_clock(project: Project, auditor: Any, pause: ClockPause | None) -> ClockPause | None:
    """Stop the clock of the item the auditor holds, as they open a saved verdict to change it (nothing is served).

    ``pause`` is the one kept from before (the session's): while it still stops the held serve (a reload of the
    change page, u to the verdict before, a second tab) it is kept, so the clock stands still from the first of
    them; else the clock stops now. None when the auditor holds no item."""
    held = _held(project, auditor)
    if held is None:
        return None
    if pause is not None and pause.audit == held.pk and pause.start == held.served_at:
        return pause
    return ClockPause(audit=held.pk, since=clock.now(), start=held.served_at)


def resume_item_clock(project: Project, auditor: Any, pause: ClockPause | None) -> float:
    """Start the held item's clock again as the auditor comes back to it: its ``served_at`` moves forward by the time
    the clock stood still, so the page's clock and the verdict's ``seconds`` leave out the time spent changing a
    saved verdict. Returns the seconds left out: 0 when there is nothing to resume (no pause; the serve answered,
    released, or already resumed). ``served_at`` never moves past now: the item's time is never negative."""
    if pause is None:
        return 0.0
    with transaction.atomic():
        audit = (
            Audit.objects.select_for_update(of=("self",))
            .filter(pk=pause.audit, item__project=project, auditor=auditor, answered_at__isnull=True)
            .first()
        )
        if audit is None or audit.served_at != pause.start:
            return 0.0
        moment = clock.now()
        stood = max(timedelta(0), moment - max(pause.since, audit.served_at))
        if stood:
            audit.served_at += stood
            audit.save(update_fields=["served_at"])
    return stood.total_seconds()


# --------------------------------------------------------------------------- progress


def audit_progress(project: Project, auditor: Any) -> dict[str, int]:
    """``answered``: the auditor's verdicts in the project; ``left``: items still open to them, the one they
    hold included; ``items``: the queue's size; ``complete``: items with all their audits answered;
    ``audits_per_item``: how many auditors answer each item."""
    settings = judging_settings_of(project)
    mine = Audit.objects.filter(item__project=project, auditor=auditor)
    answered = mine.filter(answered_at__isnull=False).count()
    holding = mine.filter(answered_at__isnull=True).count()
    items = AuditItem.objects.filter(project=project)
    complete = (
        items.annotate(done=Count("audits", filter=Q(audits__answered_at__isnull=False)))
        .filter(done__gte=settings.audits_per_item)
        .count()
    )
    return {
        "answered": answered,
        "left": _open_items(project, auditor, settings).count() + holding,
        "items": items.count(),
        "complete": complete,
        "audits_per_item": settings.audits_per_item,
    }
