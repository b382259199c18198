"""Saved verdicts as a list: an auditor's own ("My audits"), or for a project admin every auditor's, newest first,
narrowed by the judge whose answer was shown, the auditor's score, disagreement and the reasoning mark.

Read only: a verdict is changed on the audit page (its answered view, judging.views.audit.saved), by its own auditor,
under the rules of judging.services.audits.verdicts (a blind score stays the one given first). The judge's score as
seen is the answer the auditor was shown (``Audit.judgement``), not the judge's latest.

A verdict **disagrees** with the judge when the judge's level differs from the auditor's score: the judge's 1-5
score, or for an NLI judge the level nearest 1 + 4p, halves up (judging.people.judge_level, the judge-vs-people page's
rule). A verdict shown no scored answer (none, a parse error, an endpoint error) neither agrees nor disagrees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Case, F, IntegerField, Q, QuerySet, Value, When
from django.db.models.functions import Cast, Floor, Greatest, Least

from annotate.models import Project
from judging.models import Audit, Judge
from judging.services.audits.auditors import AUDITOR_ROLES, check_auditor

SCORES = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class VerdictFilters:
    """What the list is narrowed to; None (or False) is no narrowing. ``auditor`` is a user id (admins only)."""

    judge: int | None = None
    score: int | None = None
    disagreements: bool = False
    reasoning_wrong: bool = False
    auditor: int | None = None

    @classmethod
    def read(cls, query: Any) -> tuple[VerdictFilters, list[str]]:
        """The filters from a page's query string, and what could not be read (each left out, named)."""
        problems: list[str] = []

        def whole(name: str, allowed: Any = None) -> int | None:
            raw = str(query.get(name, "") or "").strip()
            if not raw:
                return None
            if raw.isdigit() and len(raw) <= 18 and (allowed is None or int(raw) in allowed):
                return int(raw)
            problems.append(f"{name} {raw!r} is not one of the choices: left out")
            return None

        def flag(name: str) -> bool:
            return str(query.get(name, "") or "") in ("1", "on", "true")

        return cls(judge=whole("judge"), score=whole("score", SCORES), disagreements=flag("disagreements"),
                   reasoning_wrong=flag("reasoning_wrong"), auditor=whole("auditor")), problems


def _judge_level() -> Case:
    """The level of the judge's answer shown, in SQL: its score, else the nearest level to 1 + 4p (halves up)."""
    nearest = Cast(Floor(Value(1.5) + Value(4.0) * F("judgement__probability")), IntegerField())
    return Case(
        When(judgement__score__isnull=False, then=F("judgement__score")),
        When(judgement__probability__isnull=False, then=Least(Greatest(nearest, Value(1)), Value(5))),
        default=None,
        output_field=IntegerField(),
    )


def saved_verdicts(project: Project, viewer: Any, filters: VerdictFilters, *, every_auditor: bool) -> QuerySet[Audit]:
    """The answered audits of the project the viewer may list, newest first (by first answer; a change keeps an
    audit's place), narrowed by ``filters``. ``every_auditor``: a project admin's list, every auditor's audits
    (``filters.auditor`` narrows it to one); otherwise the viewer's own, whatever ``filters.auditor`` says. Each row
    has ``judge_level`` (None when the answer shown had no figure) and ``disagrees``."""
    check_auditor(project, viewer)
    found = Audit.objects.filter(item__project=project, answered_at__isnull=False)
    if not every_auditor:
        found = found.filter(auditor=viewer)
    elif filters.auditor is not None:
        found = found.filter(auditor_id=filters.auditor)
    found = found.annotate(judge_level=_judge_level()).annotate(
        disagrees=Case(
            When(Q(judge_level__isnull=False) & ~Q(judge_level=F("score")), then=Value(True)),
            default=Value(False),
        )
    )
    if filters.judge is not None:
        found = found.filter(judgement__run__judge_id=filters.judge)
    if filters.score is not None:
        found = found.filter(score=filters.score)
    if filters.disagreements:
        found = found.filter(disagrees=True)
    if filters.reasoning_wrong:
        found = found.filter(reasoning_wrong=True)
    return found.select_related(
        "auditor", "item__sample__batch", "judgement__run__judge"
    ).order_by("-answered_at", "-id")


def verdict_judges(project: Project, viewer: Any, *, every_auditor: bool) -> list[Judge]:
    """The judges whose answers were shown in the audits the viewer may list: the judge filter's choices."""
    audits = Audit.objects.filter(item__project=project, answered_at__isnull=False)
    if not every_auditor:
        audits = audits.filter(auditor=viewer)
    ids = audits.exclude(judgement=None).values("judgement__run__judge_id")
    return list(Judge.objects.filter(project=project, pk__in=ids).order_by("name"))


def verdict_auditors(project: Project) -> list[Any]:
    """The project's auditors and admins, and anyone else with a saved verdict in it (a member since removed, whose
    audits stay): the auditor filter's choices on an admin's list."""
    with_verdicts = Audit.objects.filter(item__project=project, answered_at__isnull=False).values("auditor_id")
    members = project.memberships.filter(role__in=AUDITOR_ROLES).values("user_id")
    return list(get_user_model().objects.filter(Q(pk__in=with_verdicts) | Q(pk__in=members)).order_by("username"))
