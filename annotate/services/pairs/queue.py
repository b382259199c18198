"""The next-item queue of pair judges, their answers, and undo.

Serving an item creates its judgement unanswered (label "") and takes one of
the item's slots (``PairItem.taken``); the answer fills the label in. The
queue never lets ``taken`` pass ``judges_needed``: on PostgreSQL the candidate
is picked with ``SELECT ... FOR UPDATE SKIP LOCKED`` (two judges asking at once
get different items instead of waiting for each other), and the claim is a
conditional UPDATE (``taken < judges_needed``) that succeeds or changes
nothing, so it holds on SQLite too (whose transactions here take the write
lock at BEGIN). Each judge's requests in a project run one at a time: they
start by locking the judge's membership row. That is what keeps a judge to
one outstanding serve even with the page open in two tabs.

An unanswered serve holds its slot for ``PairConfig.serve_minutes``. After
that it is released lazily, the next time anyone asks for an item: its slot
goes back to the item, and the row stays as an uncounted, unanswered
judgement. Keeping the row (rather than deleting it) means the judge is
never served that item again, and a late answer gets a precise 409 when the
slot has gone to someone else in the meantime, or is taken back and
accepted when the item still has room.

The API's answer-and-next (``record_and_serve_next``) is one transaction:
lock the judge, record the answer, run the spammer rules, claim the next
item; the texts to show and the progress are read after the commit, so
item rows stay locked only while they are written. Once it holds the
answered item nothing in it waits for another transaction (expired serves
and candidates others hold are skipped), so answers cannot deadlock.

The server's clock is read through ``now()``, the one seam tests move to
make a judge fast or slow without sleeping (``monkeypatch.setattr(queue,
"now", ...)``); served_at, answered_at and the seconds per item all come
from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ObjectDoesNotExist
from django.db import connection, transaction
from django.db.models import Case, Count, F, QuerySet, Value, When
from django.utils import timezone

from annotate.models import BlockedJudge, JudgeFlag, Membership, PairConfig, PairItem, PairJudgement, PairRound, Project
from annotate.pairmath.consensus import outcome

LABELS = ("H", "N", "?")
# Who judges pairs: the project's annotators, and its admins (trying the page, or judging themselves).
JUDGE_ROLES = (Membership.Role.ANNOTATOR, Membership.Role.ADMIN)
# States in which an item's counters and outcome follow its judgements (drawn into a round).
JUDGED_STATES = (PairItem.State.OPEN, PairItem.State.CONSENSUS, PairItem.State.NO_CONSENSUS)
_OUTCOME_STATE = {
    "pending": PairItem.State.OPEN,
    "consensus": PairItem.State.CONSENSUS,
    "no_consensus": PairItem.State.NO_CONSENSUS,
}
# How many candidates the queue tries when another judge's claim wins the race for one.
_CLAIM_ATTEMPTS = 5


def now() -> datetime:
    """The server clock for serving and answering (tests replace it; see the module docstring)."""
    return timezone.now()


# --------------------------------------------------------------------------- errors


class PairQueueError(Exception):
    """Refused: ``status`` is the HTTP status the API answers with, ``code`` a short name, the message says why."""

    status = 409
    code = "conflict"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotAJudge(PairQueueError):
    """No role in the project (status 404: its existence is not revealed), or a role that does not judge (403)."""

    code = "not_a_judge"

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.status = status


class JudgeBlocked(PairQueueError):
    status = 403
    code = "blocked"


class BadLabel(PairQueueError):
    status = 400
    code = "bad_label"
    field = "label"


class NoSuchItem(PairQueueError):
    status = 404
    code = "no_such_item"


class AlreadyJudged(PairQueueError):
    code = "already_judged"


class NotServed(PairQueueError):
    code = "not_served"


class ServeExpired(PairQueueError):
    code = "serve_expired"


class NothingToUndo(PairQueueError):
    code = "nothing_to_undo"


# --------------------------------------------------------------------------- the judge's lock and state


@dataclass
class _Judge:
    """What the lock query learnt about the judge in this project."""

    role: str
    held_id: int | None  # their outstanding (counted, unanswered) serve, if any
    answered: int  # their counted answers in the project
    has_flags: bool  # any spammer flag on them in the project, whatever its status
    expired: bool  # some serve in the project outlived serve_minutes and still holds its slot


def project_config(project: Project) -> PairConfig:
    try:
        return project.pair_config
    except ObjectDoesNotExist:
        from annotate.services.pairs.config import get_config

        return get_config(project)


def _is_postgres() -> bool:
    return connection.vendor == "postgresql"


def _judgements_of(project: Project, user: Any) -> QuerySet[PairJudgement]:
    return PairJudgement.objects.filter(judge=user, item__project=project)


# The three statements of the hot path (the judge's lock, the pick of the next item, the count of
# items left) are written out: built by the ORM, with their subqueries, they cost ~2 ms of CPU each
# to compile, more than the database spends answering them (docs/performance.md, "Pairs queue").
_TABLES = {
    "membership": Membership._meta.db_table,
    "blocked": BlockedJudge._meta.db_table,
    "judgement": PairJudgement._meta.db_table,
    "item": PairItem._meta.db_table,
    "round": PairRound._meta.db_table,
    "flag": JudgeFlag._meta.db_table,
}
_LOCK_JUDGE_SQL = """
    SELECT m.role,
           EXISTS (SELECT 1 FROM {blocked} b WHERE b.project_id = m.project_id AND b.judge_id = m.user_id),
           (SELECT j.id FROM {judgement} j JOIN {item} i ON i.id = j.item_id
             WHERE j.judge_id = m.user_id AND i.project_id = m.project_id AND j.counted AND j.answered_at IS NULL
             ORDER BY j.served_at DESC, j.id DESC LIMIT 1),
           (SELECT COUNT(*) FROM {judgement} j JOIN {item} i ON i.id = j.item_id
             WHERE j.judge_id = m.user_id AND i.project_id = m.project_id AND j.counted
               AND j.answered_at IS NOT NULL),
           EXISTS (SELECT 1 FROM {flag} f WHERE f.project_id = m.project_id AND f.judge_id = m.user_id),
           EXISTS (SELECT 1 FROM {judgement} j JOIN {item} i ON i.id = j.item_id
                    WHERE i.project_id = m.project_id AND j.counted AND j.answered_at IS NULL AND j.served_at < %s)
      FROM {membership} m
     WHERE m.project_id = %s AND m.user_id = %s
""".format(**_TABLES)  # noqa: S608  (table names from the models; values are parameters)
# Items the judge may be served now: open, in an open round, a slot free, never served to this judge.
_CANDIDATES_SQL = """
      FROM {item} i JOIN {round} r ON r.id = i.round_id
     WHERE i.project_id = %s AND i.state = %s AND r.status = %s AND i.taken < i.judges_needed
       AND NOT EXISTS (SELECT 1 FROM {judgement} j WHERE j.item_id = i.id AND j.judge_id = %s)
""".format(**_TABLES)  # noqa: S608
# Serves that outlived serve_minutes, unanswered and still holding a slot.
_EXPIRED_SQL = """
    SELECT j.id, j.item_id FROM {judgement} j JOIN {item} i ON i.id = j.item_id
     WHERE i.project_id = %s AND j.counted AND j.answered_at IS NULL AND j.served_at < %s
     ORDER BY j.item_id, j.id
""".format(**_TABLES)  # noqa: S608
# The answer and the item's new outcome: plain UPDATEs of the rows the answer holds locked.
_ANSWER_SQL = """
    UPDATE {judgement} SET label = %s, answered_at = %s, seconds = %s, counted = %s WHERE id = %s
""".format(**_TABLES)  # noqa: S608
_OUTCOME_SQL = """
    UPDATE {item} SET votes_h = %s, votes_n = %s, votes_unsure = %s, state = %s, label = %s, judges_needed = %s
     WHERE id = %s
""".format(**_TABLES)  # noqa: S608
_CLAIM_SQL = """
    UPDATE {item} SET taken = taken + 1 WHERE id = %s AND state = %s AND taken < judges_needed
""".format(**_TABLES)  # noqa: S608
# Closest to completion first (most answers), then round number, then id.
_CANDIDATE_ORDER = " ORDER BY (i.votes_h + i.votes_n + i.votes_unsure) DESC, r.number, i.id"


def _sql_rows(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _sql_rows_written(sql: str, params: list[Any]) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def _db_moment(moment: datetime) -> Any:
    """A datetime as the ORM stores it (SQLite keeps naive UTC text), for the written-out statements."""
    return connection.ops.adapt_datetimefield_value(moment)


def _lock_judge(project: Project, user: AbstractBaseUser) -> _Judge:
    """Lock the judge's membership row (their requests run one at a time) and check they may judge.

    One query: the role, whether they are blocked, their outstanding serve and
    their count of answers come with the row.
    """
    if not user.is_authenticated:
        raise NotAJudge("log in to judge pairs", status=404)
    lock = " FOR UPDATE OF m" if _is_postgres() else ""
    cutoff = now() - timedelta(minutes=project_config(project).serve_minutes)
    rows = _sql_rows(_LOCK_JUDGE_SQL + lock, [_db_moment(cutoff), project.pk, user.pk])
    if rows:
        role, blocked, held_id, answered_count, has_flags, expired = rows[0]
    elif user.is_superuser:  # an admin everywhere without a membership row
        mine = _judgements_of(project, user).filter(counted=True)
        held_row = mine.filter(answered_at__isnull=True).order_by("-served_at", "-id").first()
        role = Membership.Role.ADMIN
        blocked = BlockedJudge.objects.filter(project=project, judge=user).exists()
        held_id = held_row.pk if held_row else None
        answered_count = mine.filter(answered_at__isnull=False).count()
        has_flags = JudgeFlag.objects.filter(project=project, judge=user).exists()
        expired = True  # not asked: releasing finds out
    else:
        raise NotAJudge(f"no project {project.slug!r} among yours", status=404)
    if role not in JUDGE_ROLES:
        raise NotAJudge("only the project's annotators and admins judge pairs; your role here is " + role)
    if blocked:
        raise JudgeBlocked(
            f"you are blocked from judging in project {project.slug!r}: an admin reviewed your answers; "
            "ask them if you think this is a mistake"
        )
    return _Judge(role=role, held_id=held_id, answered=answered_count, has_flags=bool(has_flags),
                  expired=bool(expired))


# --------------------------------------------------------------------------- the outcome of an item


def recompute_item(item: PairItem, config: PairConfig, labels: list[str] | None = None) -> PairItem:
    """Counters, state, label and judges_needed of the item from its counted answers, in answer order.

    ``labels`` may be given when the caller already read them. The caller holds
    the item's row lock; nothing is saved here.
    """
    if labels is None:
        labels = list(
            PairJudgement.objects.filter(item=item, counted=True, answered_at__isnull=False)
            .order_by("answered_at", "id")
            .values_list("label", flat=True)
        )
    item.votes_h = labels.count("H")
    item.votes_n = labels.count("N")
    item.votes_unsure = labels.count("?")
    if item.state in JUDGED_STATES:
        decided = outcome(labels, config.judges_per_item, config.max_judges_per_item)
        item.state = _OUTCOME_STATE[decided.state]
        item.label = decided.label
        item.judges_needed = decided.judges_needed
    return item


_RECOMPUTED_FIELDS = ["votes_h", "votes_n", "votes_unsure", "state", "label", "judges_needed"]


# --------------------------------------------------------------------------- serving


def lock_rows(queryset: QuerySet[Any], of: tuple[str, ...] = ("self",), *, skip_locked: bool = False) -> QuerySet[Any]:
    """Row locks on PostgreSQL; SQLite has none (its write transactions run one at a time)."""
    if _is_postgres():
        return queryset.select_for_update(skip_locked=skip_locked, of=of)
    return queryset


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


def _with_counters(queryset: QuerySet[PairJudgement]) -> QuerySet[PairJudgement]:
    """Judgements with their item's state and counters (what answering and undo change)."""
    return queryset.select_related("item").only(*_JUDGEMENT_FIELDS, *(f"item__{name}" for name in _ITEM_FIELDS))


def _drop_serve(judgement: PairJudgement) -> None:
    """Delete an unanswered serve and give its slot back (an item that left the queue, or undo's next item)."""
    deleted, _ = PairJudgement.objects.filter(pk=judgement.pk, answered_at__isnull=True).delete()
    if deleted and judgement.counted:
        PairItem.objects.filter(pk=judgement.item_id).update(taken=_clamped_decrement(1))


def _candidate_params(project: Project, user: Any) -> list[Any]:
    return [project.pk, PairItem.State.OPEN, PairRound.Status.OPEN, user.pk]


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
    moment = now()
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
    return _serve(project, user, project_config(project))[0]


# --------------------------------------------------------------------------- answering


def _check_label(label: Any) -> str:
    if not isinstance(label, str) or label not in LABELS:
        raise BadLabel(f"{label!r} is not a label; answer one of {', '.join(LABELS)} "
                       "(H hallucination, N not hallucination, ? cannot determine)")
    return label


def _answer(project: Project, user: Any, config: PairConfig, item_id: int, label: str) -> PairJudgement:
    """Fill the label of the judge's serve of the item and decide the item (inside the caller's transaction)."""
    judgement = (
        lock_rows(_with_counters(PairJudgement.objects), of=("self", "item"))
        .filter(item_id=item_id, item__project=project, judge=user)
        .first()
    )
    if judgement is None:
        if not PairItem.objects.filter(pk=item_id, project=project).exists():
            raise NoSuchItem(f"project {project.slug!r} has no pair item {item_id}")
        raise NotServed(f"item {item_id} was not served to you; ask for your next item and answer that one")
    item = judgement.item
    if judgement.answered_at is not None:
        raise AlreadyJudged(
            f"you already judged item {item_id} ({judgement.label}); an item is judged once per judge "
            "(undo your last answer to change it)"
        )
    if not judgement.counted:
        # Released after serve_minutes: take a slot again if the item still has one.
        room = item.state == PairItem.State.OPEN and PairItem.objects.filter(
            pk=item.pk, state=PairItem.State.OPEN, taken__lt=F("judges_needed")
        ).update(taken=F("taken") + 1)
        if not room:
            raise ServeExpired(
                f"your serve of item {item_id} expired after {config.serve_minutes} minutes and its slot went to "
                "another judge; your answer was not recorded. Ask for your next item"
            )
        item.taken += 1
        judgement.counted = True
    moment = now()
    judgement.label = label
    judgement.answered_at = moment
    judgement.seconds = max(0.0, (moment - judgement.served_at).total_seconds())
    _sql_rows_written(_ANSWER_SQL, [label, _db_moment(moment), judgement.seconds, judgement.counted, judgement.pk])
    recompute_item(item, config)
    _sql_rows_written(_OUTCOME_SQL, [item.votes_h, item.votes_n, item.votes_unsure, item.state, item.label,
                                     item.judges_needed, item.pk])
    return judgement


def _check_spam(project: Project, user: Any, config: PairConfig, judge: _Judge) -> None:
    """The spammer rules, once the judge has enough answers for them to apply."""
    if judge.answered >= config.min_judgements:
        from annotate.services.pairs.flags import check_judge

        check_judge(project, user, has_flags=judge.has_flags)


def record_judgement(project: Project, user: AbstractBaseUser, item_id: int, label: str) -> PairJudgement:
    """Record the judge's answer on an item served to them; the item is decided again and the spam rules run."""
    label = _check_label(label)
    config = project_config(project)
    with transaction.atomic():
        judge = _lock_judge(project, user)
        judgement = _answer(project, user, config, item_id, label)
        judge.answered += 1
        _check_spam(project, user, config, judge)
    return judgement


@dataclass
class Answered:
    """An answer and what the judge sees next, from one transaction (the API's answer-and-next)."""

    judgement: PairJudgement
    next: PairJudgement | None
    progress: dict[str, int] = field(default_factory=dict)


def record_and_serve_next(project: Project, user: AbstractBaseUser, item_id: int, label: str) -> Answered:
    """record_judgement, then serve_next_item, and the judge's progress: the API's answer-and-next.

    One transaction under one lock of the judge. Once the answered item is
    locked nothing in it waits for a row another transaction holds (expired
    serves and candidates that others hold are skipped), so two judges
    answering at once cannot deadlock. In the rare moment when every
    candidate is held by others, the answer commits first and the next item
    is then claimed as ``serve_next_item`` does, waiting for one.
    """
    label = _check_label(label)
    config = project_config(project)
    following: PairJudgement | None = None
    with transaction.atomic():
        judge = _lock_judge(project, user)
        judgement = _answer(project, user, config, item_id, label)
        judge.answered += 1
        _check_spam(project, user, config, judge)
        if judge.held_id == judgement.pk:
            judge.held_id = None
        moment = now()
        if judge.expired:
            _release_expired(project, config, moment)
        following = _held_serve(judge)
        all_held = False
        if following is None:
            try:
                following = _claim_next(project, user, moment, may_wait=False)
            except _AllHeld:
                all_held = True
    # Reads after the commit: the items' locks are held no longer than the writes need.
    if all_held:
        following, judge = _serve(project, user, config)
    return Answered(judgement, _show(following), {"answered": judge.answered, "left": _items_left(project, user)})


# --------------------------------------------------------------------------- undo and progress


def undo_last_judgement(project: Project, user: AbstractBaseUser) -> PairJudgement | None:
    """Turn the judge's last answer in the project back into an unanswered serve; None when there is none.

    The item is decided again without the answer; the serve the judge was shown
    next goes back to the queue, so their next item is the one undone.
    """
    config = project_config(project)
    with transaction.atomic():
        judge = _lock_judge(project, user)
        last = (
            lock_rows(_with_counters(PairJudgement.objects), of=("self", "item"))
            .filter(judge=user, item__project=project, counted=True, answered_at__isnull=False)
            .order_by("-answered_at", "-id")
            .first()
        )
        if last is None:
            return None
        if judge.held_id is not None and judge.held_id != last.pk:
            held = PairJudgement.objects.filter(pk=judge.held_id).first()
            if held is not None:
                _drop_serve(held)
        last.label = ""
        last.answered_at = None
        last.seconds = None
        last.served_at = now()
        last.save(update_fields=["label", "answered_at", "seconds", "served_at"])
        item = recompute_item(last.item, config)
        item.save(update_fields=_RECOMPUTED_FIELDS)
        from annotate.services.pairs.flags import check_judge

        check_judge(project, user)  # the figures changed; below min_judgements this clears open flags
    return _with_texts(PairJudgement.objects, "item__").get(pk=last.pk)


def _items_left(project: Project, user: Any) -> int:
    return int(_sql_rows("SELECT COUNT(*)" + _CANDIDATES_SQL, _candidate_params(project, user))[0][0])


def judge_progress(project: Project, user: AbstractBaseUser) -> dict[str, int]:
    """The judge's counted answers in the project and the open items still left for them."""
    answered = _judgements_of(project, user).filter(counted=True, answered_at__isnull=False).count()
    return {"answered": answered, "left": _items_left(project, user)}


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


def recount_items(item_ids: list[int], config: PairConfig) -> list[PairItem]:
    """Recompute counters, taken and outcome of the items from their judgements (after a judge is blocked).

    Serves older than serve_minutes are released first. Locks the items in id order.
    """
    if not item_ids:
        return []
    items = list(lock_rows(PairItem.objects.filter(pk__in=item_ids).order_by("id")))
    cutoff = now() - timedelta(minutes=config.serve_minutes)
    PairJudgement.objects.filter(
        item_id__in=item_ids, counted=True, answered_at__isnull=True, served_at__lt=cutoff
    ).update(counted=False)
    labels: dict[int, list[str]] = {item.pk: [] for item in items}
    for item_id, label in (
        PairJudgement.objects.filter(item_id__in=item_ids, counted=True, answered_at__isnull=False)
        .order_by("item_id", "answered_at", "id")
        .values_list("item_id", "label")
    ):
        labels[item_id].append(label)
    held = dict(
        PairJudgement.objects.filter(item_id__in=item_ids, counted=True, answered_at__isnull=True)
        .values_list("item_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    for item in items:
        recompute_item(item, config, labels[item.pk])
        item.taken = len(labels[item.pk]) + held.get(item.pk, 0)
    PairItem.objects.bulk_update(items, [*_RECOMPUTED_FIELDS, "taken"])
    return items


