"""Spammer flags on pair judges: raised as answers arrive, reviewed by an admin, who dismisses them or blocks the judge.

``check_judge`` runs the rules of ``annotate.pairmath.spam`` over the judge's
counted answers (the queue calls it after each answer once the judge has
``min_judgements``) and keeps one ``JudgeFlag`` row per judge and rule.
``refresh_flags`` does the same for every judge at once: the flags list runs
it, because the "disagrees" figure also moves when the others answer.

- a rule tripped for the first time: a new open flag with the figures;
- an open flag whose rule still holds: its figures follow the latest answers;
- an open flag whose rule no longer holds (the judge slowed down, or an undo
  took them under the threshold): deleted, since its figures would be false;
- a dismissed flag stays dismissed, with the figures it was dismissed with,
  unless the figures got worse since, over at least ``min_judgements`` more
  answers (``spam.got_worse``): then it opens again, keeping what it was
  dismissed with under ``figures["dismissed_before"]``;
- a blocked judge's flags are left as they are.

Blocking (``block_judge``) stops the judge's judgements counting
(``counted=False``; they stay on record), deletes their unanswered serves, and
recomputes every item they judged, so an item whose consensus rested on their
vote goes back to the queue with the answers that remain.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.utils import timezone

from annotate.models import BlockedJudge, JudgeFlag, Membership, PairItem, PairJudgement, Project
from annotate.pairmath import spam
from annotate.services.pairs import queue
from annotate.services.pairs.config import loaded_config

MAX_REASON = 2000


class FlagReviewError(Exception):
    """A review that cannot be done (e.g. dismissing the flag of a judge already blocked); status 409."""

    status = 409


def limits_of(project: Project) -> spam.SpamLimits:
    config = loaded_config(project)
    return spam.SpamLimits(
        min_judgements=config.min_judgements,
        min_mean_seconds=config.spam_min_mean_seconds,
        max_disagreement=config.spam_max_disagreement,
    )


_TABLES = {"judgement": PairJudgement._meta.db_table, "item": PairItem._meta.db_table}
# The rules' figures for judges of a project, one row per judge, computed by the database. Every counted
# answer of the judge is theirs to be judged; the majority it is compared against is the OTHER judges'
# share of the answers that decided the item (its first judges_needed counted answers in answer order,
# consensus.deciding_answers): an answer past those, which an item gets when a judge is unblocked after
# others took their places, decides nothing and so sways no one's figure. On an item with no answer past
# them (nearly all) the others' votes are the item's counters less the judge's own vote; only the crowded
# items have their answers ranked. One statement, about as cheap as the counters alone.
_SUMMARY_SQL = """
    WITH mine AS (
        SELECT j.id, j.judge_id, j.item_id, j.label, j.seconds, i.votes_h, i.votes_n, i.judges_needed,
               CASE WHEN i.votes_h + i.votes_n + i.votes_unsure > i.judges_needed THEN 1 ELSE 0 END AS crowded
          FROM {judgement} j JOIN {item} i ON i.id = j.item_id
         WHERE i.project_id = %s AND j.counted AND j.answered_at IS NOT NULL {of_judge}
    ), ranked AS (
        SELECT d.id, d.item_id, d.label,
               ROW_NUMBER() OVER (PARTITION BY d.item_id ORDER BY d.answered_at, d.id) AS position
          FROM {judgement} d
         WHERE d.counted AND d.answered_at IS NOT NULL
           AND d.item_id IN (SELECT item_id FROM mine WHERE crowded = 1)
    ), crowded_votes AS (
        SELECT m.id,
               SUM(CASE WHEN r.label = 'H' AND r.id <> m.id THEN 1 ELSE 0 END) AS others_h,
               SUM(CASE WHEN r.label = 'N' AND r.id <> m.id THEN 1 ELSE 0 END) AS others_n
          FROM mine m JOIN ranked r ON r.item_id = m.item_id AND r.position <= m.judges_needed
         WHERE m.crowded = 1
         GROUP BY m.id
    ), votes AS (
        SELECT m.judge_id, m.label, m.seconds,
               CASE WHEN m.crowded = 1 THEN COALESCE(c.others_h, 0)
                    ELSE m.votes_h - CASE WHEN m.label = 'H' THEN 1 ELSE 0 END END AS others_h,
               CASE WHEN m.crowded = 1 THEN COALESCE(c.others_n, 0)
                    ELSE m.votes_n - CASE WHEN m.label = 'N' THEN 1 ELSE 0 END END AS others_n
          FROM mine m LEFT JOIN crowded_votes c ON c.id = m.id
    )
    SELECT judge_id,
           COUNT(*),
           COALESCE(SUM(CASE WHEN label = 'H' THEN 1 ELSE 0 END), 0),
           COALESCE(SUM(CASE WHEN label = 'N' THEN 1 ELSE 0 END), 0),
           COALESCE(SUM(CASE WHEN label = '?' THEN 1 ELSE 0 END), 0),
           COUNT(seconds),
           COALESCE(SUM(seconds), 0),
           COALESCE(SUM(CASE WHEN label IN ('H', 'N') AND others_h <> others_n THEN 1 ELSE 0 END), 0),
           COALESCE(SUM(CASE
               WHEN label = 'H' AND others_n > others_h THEN 1
               WHEN label = 'N' AND others_h > others_n THEN 1
               ELSE 0 END), 0)
      FROM votes
     GROUP BY judge_id
"""
_EVERY_JUDGE_SQL = _SUMMARY_SQL.format(**_TABLES, of_judge="")  # noqa: S608
_ONE_JUDGE_SQL = _SUMMARY_SQL.format(**_TABLES, of_judge="AND j.judge_id = %s")  # noqa: S608


def judge_summaries(project: Project, judge: Any = None) -> dict[int, spam.JudgeSummary]:
    """The rules' figures of every judge of the project (or of one), by judge id; one query."""
    if judge is None:
        sql, params = _EVERY_JUDGE_SQL, [project.pk]
    else:
        sql, params = _ONE_JUDGE_SQL, [project.pk, judge.pk]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return {
        judge_id: spam.JudgeSummary(
            judgements=count, label_counts={"H": int(h), "N": int(n), "?": int(unsure)}, timed=timed,
            seconds_total=float(seconds), compared=int(compared), differing=int(differing),
        )
        for judge_id, count, h, n, unsure, timed, seconds, compared, differing in rows
    }


def check_judge(project: Project, user: AbstractBaseUser, *, has_flags: bool = True) -> list[JudgeFlag]:
    """Run the spammer rules for the judge and bring their flags up to date; returns their open flags.

    The caller holds the judge's membership lock (the queue does), so two
    checks of one judge never race. ``has_flags=False`` (the queue knows it
    from its lock query) saves reading the flags when no rule trips.
    """
    limits = limits_of(project)
    summary = judge_summaries(project, user).get(user.pk)
    found = spam.spam_flags(summary, limits) if summary is not None else []
    if not found and not has_flags:
        return []
    existing = {flag.rule: flag for flag in JudgeFlag.objects.filter(project=project, judge=user)}
    return _apply(project, user.pk, found, existing, limits)


def refresh_flags(project: Project) -> None:
    """Check every judge of the project again, on everyone's answers as they are now.

    A judge is checked as their own answers arrive; the "disagrees" figure
    also moves when others answer the items they judged, or when a judge is
    blocked. The flags list calls this first, so an admin reviews figures
    that are true now. Two reads whatever the number of judges; blocked
    judges' flags are left as they are.
    """
    limits = limits_of(project)
    with transaction.atomic():
        # Each judge's own check runs under their membership lock; take them all (in id order) to write theirs.
        list(queue.lock_rows(Membership.objects.filter(project=project).order_by("id")).values_list("pk"))
        summaries = judge_summaries(project)
        existing: dict[int, dict[str, JudgeFlag]] = {}
        for flag in JudgeFlag.objects.filter(project=project):
            existing.setdefault(flag.judge_id, {})[flag.rule] = flag
        blocked = set(BlockedJudge.objects.filter(project=project).values_list("judge_id", flat=True))
        for judge_id in sorted((set(summaries) | set(existing)) - blocked):
            summary = summaries.get(judge_id)
            found = spam.spam_flags(summary, limits) if summary is not None else []
            _apply(project, judge_id, found, existing.get(judge_id, {}), limits)


def _apply(project: Project, judge_id: int, found: list[spam.SpamFlag], existing: dict[str, JudgeFlag],
           limits: spam.SpamLimits) -> list[JudgeFlag]:
    """Bring one judge's flag rows in line with the rules they trip now (see the module docstring)."""
    tripped = {flag.rule: flag.figures for flag in found}
    open_flags = []
    for rule in spam.RULES:
        flag, figures = existing.get(rule), tripped.get(rule)
        if flag is None:
            if figures is not None:
                open_flags.append(
                    JudgeFlag.objects.create(project=project, judge_id=judge_id, rule=rule, figures=figures)
                )
            continue
        if flag.status == JudgeFlag.Status.BLOCKED:
            continue
        if flag.status == JudgeFlag.Status.OPEN:
            if figures is None:
                flag.delete()
                continue
            if _core(flag.figures) != figures:
                flag.figures = {**figures, **_history(flag.figures)}
                flag.save(update_fields=["figures", "updated_at"])
            open_flags.append(flag)
            continue
        # Dismissed: open again only when the figures got worse since.
        if figures is not None and spam.got_worse(rule, _core(flag.figures), figures, limits.min_judgements):
            dismissed_at = flag.reviewed_at.isoformat() if flag.reviewed_at else None
            flag.figures = {**figures, "dismissed_before": {"figures": _core(flag.figures), "at": dismissed_at}}
            flag.status = JudgeFlag.Status.OPEN
            flag.reviewed_by = None
            flag.reviewed_at = None
            flag.save(update_fields=["figures", "status", "reviewed_by", "reviewed_at", "updated_at"])
            open_flags.append(flag)
    return open_flags


def _core(figures: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in figures.items() if key != "dismissed_before"}


def _history(figures: dict[str, Any]) -> dict[str, Any]:
    return {"dismissed_before": figures["dismissed_before"]} if "dismissed_before" in figures else {}


def _reason(reason: Any) -> str:
    if reason is None:
        return ""
    if not isinstance(reason, str):
        raise ValueError("reason: must be text")
    reason = reason.strip()
    if len(reason) > MAX_REASON:
        raise ValueError(f"reason: is {len(reason)} characters long; at most {MAX_REASON}")
    return reason


def block_judge(project: Project, judge: AbstractBaseUser, by: AbstractBaseUser | None, reason: str = ""
                ) -> BlockedJudge:
    """Block the judge: no more items, none of their judgements counts, their items are decided again.

    Blocking twice changes nothing. The returned row carries ``items_recomputed``
    and ``items_reopened`` (items that went back to the queue).
    """
    reason = _reason(reason)
    config = loaded_config(project)
    with transaction.atomic():
        # Wait for the judge's answer in flight, if any, so it is blocked with the rest.
        list(queue.lock_rows(Membership.objects.filter(project=project, user=judge)).values_list("pk"))
        blocked, created = BlockedJudge.objects.get_or_create(
            project=project, judge=judge, defaults={"blocked_by": by, "reason": reason}
        )
        moment = timezone.now()
        JudgeFlag.objects.filter(project=project, judge=judge).exclude(status=JudgeFlag.Status.BLOCKED).update(
            status=JudgeFlag.Status.BLOCKED, reviewed_by=by, reviewed_at=moment, updated_at=moment
        )
        blocked.items_recomputed = blocked.items_reopened = 0  # type: ignore[attr-defined]
        if not created:
            return blocked
        theirs = PairJudgement.objects.filter(judge=judge, item__project=project)
        item_ids = sorted(set(theirs.values_list("item_id", flat=True)))
        before = dict(PairItem.objects.filter(pk__in=item_ids).values_list("pk", "state"))
        theirs.filter(answered_at__isnull=True).delete()
        theirs.update(counted=False)
        items = queue.recount_items(item_ids, config)
    blocked.items_recomputed = len(items)  # type: ignore[attr-defined]
    blocked.items_reopened = sum(  # type: ignore[attr-defined]
        1 for item in items if item.state == PairItem.State.OPEN and before.get(item.pk) != PairItem.State.OPEN
    )
    return blocked


def unblock_judge(project: Project, judge: AbstractBaseUser, by: AbstractBaseUser | None) -> int:
    """Lift a block: the judge's answers count again (in their answer order), their items are decided again,
    and their flags go back to dismissed. Returns how many items were decided again.

    Items that were given to other judges meanwhile keep those answers too; the
    consensus rule decides on the first answers an item needs, so an item never
    gets more judges served than it needs.
    """
    config = loaded_config(project)
    with transaction.atomic():
        list(queue.lock_rows(Membership.objects.filter(project=project, user=judge)).values_list("pk"))
        deleted, _ = BlockedJudge.objects.filter(project=project, judge=judge).delete()
        if not deleted:
            raise FlagReviewError(f"{judge} is not blocked in this project")
        theirs = PairJudgement.objects.filter(judge=judge, item__project=project, answered_at__isnull=False)
        item_ids = sorted(set(theirs.values_list("item_id", flat=True)))
        theirs.update(counted=True)
        JudgeFlag.objects.filter(project=project, judge=judge, status=JudgeFlag.Status.BLOCKED).update(
            status=JudgeFlag.Status.DISMISSED, reviewed_by=by, reviewed_at=timezone.now(), updated_at=timezone.now()
        )
        return len(queue.recount_items(item_ids, config))


def dismiss_flag(flag: JudgeFlag, by: AbstractBaseUser) -> JudgeFlag:
    """The admin looked and the judge is fine: the flag stays dismissed unless their figures get worse."""
    if flag.status == JudgeFlag.Status.BLOCKED:
        raise FlagReviewError(f"{flag.judge} is blocked in this project; a blocked judge's flag cannot be dismissed")
    flag.status = JudgeFlag.Status.DISMISSED
    flag.reviewed_by = by
    flag.reviewed_at = timezone.now()
    flag.save(update_fields=["status", "reviewed_by", "reviewed_at", "updated_at"])
    return flag
