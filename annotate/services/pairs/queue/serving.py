"""Serving: releasing expired serves, picking and claiming the next item, and what the judge is shown."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import Case, F, QuerySet, Value, When

from annotate.models import PairConfig, PairItem, PairJudgement, PairRound, Project
from annotate.services.pairs.config import loaded_config
from annotate.services.pairs.queue import locks
from annotate.services.pairs.queue.locks import (
    _CANDIDATE_ORDER,
    _CANDIDATES_SQL,
    _CLAIM_SQL,
    _EXPIRED_SQL,
    _candidate_params,
    _db_moment,
    _is_postgres,
    _Judge,
    _lock_judge,
    _sql_rows,
)
from annotate.services.pairs.queue.outcome import JUDGED_STATES

# How many candidates the queue tries when another judge's claim wins the race for one.
_CLAIM_ATTEMPTS = 5


def _release_expired(project: Project, config: PairConfig, moment: datetime) -> int:
    """Give the slots of serves older than serve_minutes back to their items; returns how many.

    Rows and items that another transaction holds are skipped (a later call
    releases them), so releasing never waits and never deadlocks with an answer.
    """
    cutoff = moment - timedelta(minutes=config.serve_minutes)
    lock = " FOR UPDATE OF j, i SKIP LOCKED" if _is_postgres() else ""
    rows = _sql_rows(_EXPIRED_SQL + lock, [project.pk, _db_moment(cutoff)])
    if not rows:
        return 0
    PairJudgement.objects.filter(pk__in=[pk for pk, _ in rows]).update(counted=False)
    per_item: dict[int, int] = {}
    for _, item_id in rows:
        per_item[item_id] = per_item.get(item_id, 0) + 1
    for item_id, released in sorted(per_item.items()):
        PairItem.objects.filter(pk=item_id).update(taken=_clamped_decrement(released))
    return len(rows)


def _clamped_decrement(by: int) -> Any:
    return Case(When(taken__gte=by, then=F("taken") - by), default=Value(0))


def _servable(judgement: PairJudgement) -> bool:
    item = judgement.item
    return item.state in JUDGED_STATES and item.round is not None and item.round.status == PairRound.Status.OPEN


# The columns the queue reads and writes. Leaving out the rest (the span vector, the JSON fields) halves the
# CPU of building the objects, which is most of what these queries cost.
_ITEM_FIELDS = (
    "id", "project_id", "perturbed_id", "round_id", "state", "label", "judges_needed", "taken",
    "votes_h", "votes_n", "votes_unsure",
)
_SHOWN_FIELDS = (
    "original_start", "original_end", "original_words", "perturbed_start", "perturbed_end", "perturbed_words",
)
_JUDGEMENT_FIELDS = ("id", "item_id", "judge_id", "round_id", "label", "served_at", "answered_at", "seconds", "counted")


def _with_texts(queryset: QuerySet[Any], prefix: str = "") -> QuerySet[Any]:
    """The item (or the judgement's item) with what a judge is shown: both texts, the spans, the round."""
    fields = [f"{prefix}{name}" for name in (*_ITEM_FIELDS, *_SHOWN_FIELDS)] + [
        f"{prefix}perturbed__text", f"{prefix}perturbed__original_id", f"{prefix}perturbed__original__text",
        f"{prefix}round__status", f"{prefix}round__number",
    ]
    if prefix:
        fields += list(_JUDGEMENT_FIELDS)
    return queryset.select_related(f"{prefix}perturbed__original", f"{prefix}round").only(*fields)


def _with_counters(queryset: QuerySet[PairJudgement], *, with_round: bool = False) -> QuerySet[PairJudgement]:
    """Judgements with their item's state and counters (what answering and undo change), and with ``with_round``
    the item's round's number and status, in the same query."""
    fields = [*_JUDGEMENT_FIELDS, *(f"item__{name}" for name in _ITEM_FIELDS)]
    if with_round:
        return queryset.select_related("item__round").only(*fields, "item__round__number", "item__round__status")
    return queryset.select_related("item").only(*fields)


def _drop_serve(judgement: PairJudgement) -> None:
    """Delete an unanswered serve and give its slot back (an item that left the queue, or undo's next item)."""
    deleted, _ = PairJudgement.objects.filter(pk=judgement.pk, answered_at__isnull=True).delete()
    if deleted and judgement.counted:
        PairItem.objects.filter(pk=judgement.item_id).update(taken=_clamped_decrement(1))


def _pick(project: Project, user: Any, tried: list[int], *, lock: str = "", only: int | None = None
          ) -> tuple[int, int, int] | None:
    """The best candidate's (id, round, perturbed text); ``lock`` "" (none), "skip" (others' rows) or "wait"."""
    sql, params = "SELECT i.id, i.round_id, i.perturbed_id" + _CANDIDATES_SQL, _candidate_params(project, user)
    if tried:
        sql += " AND i.id NOT IN (" + ", ".join(["%s"] * len(tried)) + ")"
        params += tried
    if only is not None:
        sql += " AND i.id = %s"
        params.append(only)
    sql += _CANDIDATE_ORDER + " LIMIT 1"
    if lock and _is_postgres():
        sql += " FOR UPDATE OF i SKIP LOCKED" if lock == "skip" else " FOR UPDATE OF i"
    rows = _sql_rows(sql, params)
    return (rows[0][0], rows[0][1], rows[0][2]) if rows else None


def _claim(item_id: int) -> bool:
    """Take one slot of the item if it is open and has one free: the conditional UPDATE that cannot over-assign."""
    with connection.cursor() as cursor:
        cursor.execute(_CLAIM_SQL, [item_id, PairItem.State.OPEN])
        return cursor.rowcount == 1


class _AllHeld(Exception):
    """Every candidate is locked by another transaction this moment (and waiting was not allowed)."""


def _claim_next(project: Project, user: Any, moment: datetime, *, may_wait: bool = True) -> PairJudgement | None:
    """Claim a slot on the best candidate and create the serve; None when no candidate is left for the judge.

    The first pick skips rows other transactions hold, so judges asking at
    once spread over different items instead of queueing for the best one.
    When every candidate is held at that moment (the last few items of a
    round), the pick waits for the first of them rather than answer "nothing
    left" while work remains; a caller that holds an item lock passes
    ``may_wait=False`` and gets ``_AllHeld`` instead, so no wait can close a
    cycle of locks.
    """
    tried: list[int] = []
    for _ in range(_CLAIM_ATTEMPTS):
        picked = _pick(project, user, tried, lock="skip")
        if picked is None and _is_postgres():
            held_elsewhere = _pick(project, user, tried)
            if held_elsewhere is None:
                return None
            if not may_wait:
                raise _AllHeld
            picked = _pick(project, user, tried, lock="wait", only=held_elsewhere[0])
            if picked is None:  # it filled up (or was decided) while we waited
                tried.append(held_elsewhere[0])
                continue
        if picked is None:
            return None
        item_id, round_id, perturbed_id = picked
        if not _claim(item_id):  # another judge's claim took the last slot between our read and our update
            tried.append(item_id)
            continue
        # The item's texts are read after the transaction (_show), so the claimed row is held for less time.
        judgement = PairJudgement.objects.create(item_id=item_id, judge=user, round_id=round_id, served_at=moment)
        judgement.perturbed_id = perturbed_id  # type: ignore[attr-defined]
        return judgement
    return None


def _show(judgement: PairJudgement | None) -> PairJudgement | None:
    """Attach what the judge is shown to a new serve: the item with both texts, and its text's other spans.

    One query reads every item of the perturbed text, the served one with its texts.
    """
    if judgement is None or PairJudgement._meta.get_field("item").is_cached(judgement):
        return judgement
    perturbed_id = judgement.perturbed_id  # type: ignore[attr-defined]  (left by _claim_next)
    siblings = list(_with_texts(PairItem.objects).filter(perturbed_id=perturbed_id).order_by(
        "perturbed_start", "position", "id"
    ))
    item = next(sibling for sibling in siblings if sibling.pk == judgement.item_id)
    item.sibling_spans = [  # type: ignore[attr-defined]
        [sibling.perturbed_start, sibling.perturbed_end] for sibling in siblings if sibling.pk != item.pk
    ]
    judgement.item = item
    return judgement


def _held_serve(judge: _Judge) -> PairJudgement | None:
    """The judge's outstanding serve, with its item and texts, if it can still be answered; else it is dropped."""
    if judge.held_id is None:
        return None
    held = _with_texts(PairJudgement.objects, "item__").filter(
        pk=judge.held_id, counted=True, answered_at__isnull=True
    ).first()
    if held is None:
        return None
    if _servable(held):
        return held
    _drop_serve(held)
    return None


def _serve(project: Project, user: AbstractBaseUser, config: PairConfig) -> tuple[PairJudgement | None, _Judge]:
    """Release expired serves (their own short transaction), then the judge's serve under their lock.

    The judge's outstanding serve comes back if there is one; else a newly
    claimed item. Returns it with what the lock query learnt about the judge.
    """
    moment = locks.now()
    with transaction.atomic():
        _release_expired(project, config, moment)
    with transaction.atomic():
        judge = _lock_judge(project, user)
        serve = _held_serve(judge) or _claim_next(project, user, moment)
    return _show(serve), judge


def serve_next_item(project: Project, user: AbstractBaseUser) -> PairJudgement | None:
    """The judge's next item as its (unanswered) judgement, or None when nothing is left for them.

    Asking again before answering returns the same item (one outstanding serve
    per judge and project).
    """
    return _serve(project, user, loaded_config(project))[0]


def other_spans(item: PairItem) -> list[list[int]]:
    """The other replaced spans of the item's perturbed text, [start, end] in text order."""
    known = getattr(item, "sibling_spans", None)
    if known is not None:
        return known
    rows = (
        PairItem.objects.filter(perturbed_id=item.perturbed_id)
        .exclude(pk=item.pk)
        .order_by("perturbed_start", "position", "id")
        .values_list("perturbed_start", "perturbed_end")
    )
    return [[start, end] for start, end in rows]
