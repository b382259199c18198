"""The score an auditor gives in blind mode, before the judges' answers are shown to them (the page's reveal).

Kept in its own table (BlindScore: one row per auditor and item, with when it was given), not in the login session:
a session that ended between the reveal and the save, or a verdict saved from another browser or by the API, still
finds it, and the verdict is blind when its final score is that one (verdicts.submit_audit reads it). Written once: a
second score sent before a reveal (another tab that still hid the judges, a form sent twice) leaves the first,
since the judges were shown right after the first and a later score may lean on them.

Once an item's judges' answers have been shown to the auditor (JudgesShown: the page's reveal or a view that did
not hide them, or the API's queue, which always includes them) no blind score is taken for it: a new login or
another browser hides the answers no more, so a score given after seeing them is never counted as blind.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from annotate.models import Project
from judging.models import Audit, AuditItem, BlindScore, JudgesShown
from judging.services.audits import clock
from judging.services.audits.auditors import AuditError, check_auditor


def give_blind_score(project: Project, auditor: Any, item_id: int, score: Any) -> tuple[BlindScore, bool]:
    """Keep ``score`` as the auditor's blind score for the item served to them; returns the row kept and whether
    this call wrote it (False: one was given before, and it stays as it was).

    Refusals (AuditError, nothing written): 400 a score that is not a whole number 1-5, 403 not an auditor, 404 no
    such item in the project, 409 the item is not served to the auditor or they answered it already, or its judges'
    answers were shown to them before (``judges_seen``: a score now would not be blind).
    """
    if isinstance(score, bool) or not isinstance(score, int) or not 1 <= score <= 5:
        raise AuditError(f"score must be a whole number from 1 to 5, not {score!r}", status=400, field="score")
    check_auditor(project, auditor)
    item = AuditItem.objects.filter(project=project, pk=item_id).first()
    if item is None:
        raise AuditError("No such audit item in this project", status=404, code="no_such_item")
    if not Audit.objects.filter(item=item, auditor=auditor, answered_at__isnull=True).exists():
        raise AuditError(
            "this item is not served to you, or you answered it already: a blind score comes before the verdict",
            code="not_served",
        )
    kept = BlindScore.objects.filter(item=item, auditor=auditor).first()
    if kept is not None:
        return kept, False
    if judges_were_shown(auditor, item.pk):
        raise AuditError(
            "the judges' answers for this output were shown to you before (in another session, browser or through "
            "the API), so a score now would not be blind; they are shown below: choose your score there",
            code="judges_seen",
        )
    try:
        with transaction.atomic():
            return BlindScore.objects.create(item=item, auditor=auditor, score=score, given_at=clock.now()), True
    except IntegrityError:  # given at the same moment by another request: the one that got there first stays
        return BlindScore.objects.get(item=item, auditor=auditor), False


def blind_score_of(auditor: Any, item_id: int) -> int | None:
    """The score the auditor gave the item blind, or None."""
    return BlindScore.objects.filter(item_id=item_id, auditor=auditor).values_list("score", flat=True).first()


def judges_shown(auditor: Any, item_id: int) -> None:
    """Note that the item's judges' answers are being shown to the auditor (the first time counts; nothing else
    changes)."""
    if JudgesShown.objects.filter(item_id=item_id, auditor=auditor).exists():
        return
    try:
        with transaction.atomic():
            JudgesShown.objects.create(item_id=item_id, auditor=auditor, shown_at=clock.now())
    except IntegrityError:  # noted at the same moment by another request
        pass


def judges_were_shown(auditor: Any, item_id: int) -> bool:
    """Whether the item's judges' answers were ever shown to the auditor."""
    return JudgesShown.objects.filter(item_id=item_id, auditor=auditor).exists()
