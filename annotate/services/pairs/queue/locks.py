"""The judge's lock, the server clock, and the hand-written SQL of the queue's hot path.

The server's clock is read through ``now()``, the one seam tests move to make
a judge fast or slow without sleeping (``monkeypatch.setattr(locks, "now",
...)``, see the ``clock`` fixture in tests/pairs/conftest.py). The other
modules of the queue call it as ``locks.now()``, through this module, so the
one replacement reaches them all; served_at, answered_at and the seconds per
item all come from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import QuerySet
from django.utils import timezone

from annotate.models import BlockedJudge, JudgeFlag, Membership, PairItem, PairJudgement, PairRound, Project
from annotate.services.pairs.config import loaded_config
from annotate.services.pairs.queue.errors import JudgeBlocked, NotAJudge

# Who judges pairs: the project's annotators, and its admins (trying the page, or judging themselves).
JUDGE_ROLES = (Membership.Role.ANNOTATOR, Membership.Role.ADMIN)


def now() -> datetime:
    """The server clock for serving and answering (tests replace it; see the module docstring)."""
    return timezone.now()


@dataclass
class _Judge:
    """What the lock query learnt about the judge in this project."""

    role: str
    held_id: int | None  # their outstanding (counted, unanswered) serve, if any
    answered: int  # their counted answers in the project
    has_flags: bool  # any spammer flag on them in the project, whatever its status
    expired: bool  # some serve in the project outlived serve_minutes and still holds its slot


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
# PostgreSQL takes the judge's lock alone first (see _lock_judge).
_LOCK_ONLY_SQL = """
    SELECT 1 FROM {membership} m WHERE m.project_id = %s AND m.user_id = %s FOR UPDATE
""".format(**_TABLES)  # noqa: S608
# Items the judge may be served now: open, in an open round, a slot free, never served to this judge.
_CANDIDATES_SQL = """
      FROM {item} i JOIN {round} r ON r.id = i.round_id
     WHERE i.project_id = %s AND i.state = %s AND r.status = %s AND i.taken < i.judges_needed
       AND NOT EXISTS (SELECT 1 FROM {judgement} j WHERE j.item_id = i.id AND j.judge_id = %s)
""".format(**_TABLES)  # noqa: S608
# Items left for the judge, the one definition every page and the API show: the candidates above, plus their own
# unanswered serve of an open item (the item on their screen is still theirs to answer).
_ITEMS_LEFT_SQL = """
    SELECT (SELECT COUNT(*) {candidates})
         + (SELECT COUNT(*) FROM {judgement} j JOIN {item} i ON i.id = j.item_id JOIN {round} r ON r.id = i.round_id
             WHERE i.project_id = %s AND i.state = %s AND r.status = %s AND j.judge_id = %s
               AND j.counted AND j.answered_at IS NULL)
""".format(candidates=_CANDIDATES_SQL, **_TABLES)  # noqa: S608
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
# Closest to completion first: fewest answers still needed (an item split at 4 of 6 needs 2, one at 3 of 4
# needs 1), then most answers, then round number, then id.
_CANDIDATE_ORDER = (
    " ORDER BY (i.judges_needed - i.votes_h - i.votes_n - i.votes_unsure),"
    " (i.votes_h + i.votes_n + i.votes_unsure) DESC, r.number, i.id"
)


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


def _candidate_params(project: Project, user: Any) -> list[Any]:
    return [project.pk, PairItem.State.OPEN, PairRound.Status.OPEN, user.pk]


def lock_rows(queryset: QuerySet[Any], of: tuple[str, ...] = ("self",), *, skip_locked: bool = False) -> QuerySet[Any]:
    """Row locks on PostgreSQL; SQLite has none (its write transactions run one at a time)."""
    if _is_postgres():
        return queryset.select_for_update(skip_locked=skip_locked, of=of)
    return queryset


def blocked_message(project: Project) -> str:
    """Why a blocked judge gets no item: the API's refusal and the labeling page say it in the same words, naming
    the project as its members know it (by name, not by slug)."""
    return (
        f'You are blocked from judging in the project "{project.name}": an admin reviewed your answers. '
        "Ask the project's admins if you think this is a mistake."
    )


def check_judge_role(role: str) -> None:
    """403 for a member whose role does not judge pairs: the queue asks under the judge's lock, and the answer
    endpoint before it reads the answer (a caller who may not answer learns that first, not what the body lacks)."""
    if role not in JUDGE_ROLES:
        raise NotAJudge("only the project's annotators and admins judge pairs; your role here is " + role)


def _lock_judge(project: Project, user: AbstractBaseUser) -> _Judge:
    """Lock the judge's membership row (their requests run one at a time) and check they may judge.

    On PostgreSQL the lock is taken by a statement of its own, and what the
    judge may do (the role, whether they are blocked, their outstanding serve,
    their count of answers) is read by the next one. A single ``SELECT ... FOR
    UPDATE`` that waited for the lock re-reads the locked row only: its
    subqueries keep the snapshot taken before the wait (READ COMMITTED), so a
    request that queued behind the judge's other request, or behind an admin
    blocking them, would miss the serve that request made or the block, and
    serve a second item or count an answer of a blocked judge. The second
    statement starts after the lock is held and sees all of that. SQLite runs
    one write transaction at a time and needs neither.
    """
    if not user.is_authenticated:
        raise NotAJudge("log in to judge pairs", status=404)
    if _is_postgres():
        _sql_rows(_LOCK_ONLY_SQL, [project.pk, user.pk])
    cutoff = now() - timedelta(minutes=loaded_config(project).serve_minutes)
    rows = _sql_rows(_LOCK_JUDGE_SQL, [_db_moment(cutoff), project.pk, user.pk])
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
    check_judge_role(role)
    if blocked:
        raise JudgeBlocked(blocked_message(project))
    return _Judge(role=role, held_id=held_id, answered=answered_count, has_flags=bool(has_flags),
                  expired=bool(expired))
