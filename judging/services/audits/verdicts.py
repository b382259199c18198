"""Answering an item (a score 1-5 or agreeing with the judge shown) and changing one's own saved verdict, whole
(:func:`change_audit`) or in part (:func:`amend_audit`); see the package docstring for what a change keeps."""


from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from django.db import transaction
from django.utils import timezone

from annotate.models import Project
from annotate.services.clock import elapsed_seconds
from judging.models import Audit, AuditItem
from judging.services.audits import clock
from judging.services.audits.auditors import AuditError, check_auditor
from judging.services.audits.blind import blind_score_of

MAX_NOTE = 5000

# The version of a saved verdict is its ``changed_at``: what a change form or an API client read, so that a change
# sent from a stale view (a tab opened before another one changed the verdict) is refused, not written over the
# newer one. UNCHANGED stands for a verdict never changed since its first answer (``changed_at`` null).
UNCHANGED = "none"
VerdictSeen = datetime | Literal["none"]


class VerdictChanged(AuditError):
    """A change refused (409, nothing saved) because the saved verdict changed after the one its sender saw.
    ``current`` is the audit as saved now; ``message`` says so for the page, ``api_message`` for API clients."""

    def __init__(self, message: str, current: Audit, *, api_message: str) -> None:
        super().__init__(message, code="changed_since")
        self.current = current
        self.api_message = api_message


def verdict_stamp(audit: Audit) -> str:
    """What a change form carries about the verdict it shows: UNCHANGED, or when it was last changed."""
    return UNCHANGED if audit.changed_at is None else audit.changed_at.isoformat()


def read_verdict_stamp(raw: str) -> VerdictSeen:
    """A form's ``base_changed_at`` back; AuditError (400) naming the field when it is neither ``none`` nor a time."""
    if raw.strip() == UNCHANGED:
        return UNCHANGED
    try:
        seen = datetime.fromisoformat(raw.strip())
    except ValueError:
        raise AuditError(f"base_changed_at: {raw!r} is neither 'none' nor a time; reload the page", status=400,
                         field="base_changed_at") from None
    return seen if timezone.is_aware(seen) else timezone.make_aware(seen)


def _changed_since(audit: Audit, seen: VerdictSeen | None) -> bool:
    """Whether the locked ``audit`` was changed after the version ``seen`` (None: no check asked for)."""
    if seen is None:
        return False
    if isinstance(seen, datetime):
        return audit.changed_at != seen
    return audit.changed_at is not None


def _refuse_changed(audit: Audit, seen: VerdictSeen | None) -> VerdictChanged:
    """The refusal of a change sent from a view older than the saved verdict, naming who changed it and when."""
    assert audit.changed_at is not None  # a verdict never changed cannot be newer than any view of it
    when = f"{timezone.localtime(audit.changed_at):%Y-%m-%d %H:%M:%S}"
    saw = ("as first answered" if not isinstance(seen, datetime)
           else f"as changed at {timezone.localtime(seen):%Y-%m-%d %H:%M:%S}")
    who = audit.auditor.get_username()
    agreed = ", agreed" if audit.agreed else ""
    return VerdictChanged(
        f"this verdict was changed at {when} in another tab or browser (or through the API) since this page showed "
        "it: see below",
        audit,
        api_message=f"Audit {audit.pk} was changed at {when} by {who} (another tab, browser or API client), after "
        f"the verdict base_changed_at names (you saw it {saw}); nothing was changed. 'current' holds the saved "
        f"verdict (score {audit.score}{agreed}): to apply your change over it, send it again with current's "
        "changed_at as base_changed_at.",
    )


def _clean_score(score: Any) -> int | None:
    if score is None:
        return None
    if isinstance(score, bool) or not isinstance(score, int) or not 1 <= score <= 5:
        raise AuditError(f"score must be a whole number from 1 to 5, not {score!r}", status=400, field="score")
    return score


def submit_audit(
    project: Project,
    auditor: Any,
    item_id: int,
    *,
    score: int | None,
    agreed: bool,
    reasoning_wrong: bool,
    note: str,
) -> tuple[Audit, bool]:
    """Record the auditor's verdict on the item served to them: their score, or the shown judge's when they agree.
    Returns the audit and whether this call recorded it.

    The score they gave while the judges' answers were hidden (blind mode: :func:`give_blind_score`), if any, is kept
    as the audit's ``blind_score``, and the audit is ``blind`` when the final score is that one.

    Safe to send again, for the page (Enter after a network error) and API clients alike, whose answer a dropped
    connection lost: the same verdict on an item the auditor has answered (the saved one: the same final score,
    agreement, reasoning mark and note) is a retry, and the saved audit comes back unchanged (``answered_at``,
    ``seconds``, ``changed_at`` included) with False. Refusals (AuditError, nothing saved): 400 bad input, 403 not
    an auditor, 404 no such item in the project, 409 not served to you, answered already with another verdict
    (change the saved verdict with :func:`change_audit`), or nothing to agree with (the shown answer has no 1-5
    score).
    """
    check_auditor(project, auditor)
    score, note = _clean_verdict(score, agreed, note)
    with transaction.atomic():
        item = AuditItem.objects.filter(project=project, pk=item_id).first()
        if item is None:
            raise AuditError("No such audit item in this project", status=404, code="no_such_item")
        audit = (
            Audit.objects.select_for_update(of=("self",))
            .select_related("judgement__run__judge")
            .filter(item=item, auditor=auditor)
            .first()
        )
        if audit is None:
            raise AuditError(
                "this item is not served to you (or your serve expired and went to another auditor): "
                "ask for your next item",
                code="not_served",
            )
        if audit.answered_at is not None:
            if _repeats_saved(audit, score=score, agreed=agreed, reasoning_wrong=reasoning_wrong, note=note):
                return audit, False
            raise AuditError(
                f"you audited this item already (score {audit.score}); an item is answered once: change that verdict "
                f"as audit {audit.pk} instead (u on the audit page, PUT /api/audits/{audit.pk}/)",
                code="already_audited",
            )
        score = _final_score(audit, score, agreed)
        _check_reasoning_wrong(audit, reasoning_wrong)
        blind_score = blind_score_of(auditor, item.pk)
        moment = clock.now()
        audit.score = score
        audit.agreed = bool(agreed)
        audit.reasoning_wrong = bool(reasoning_wrong)
        audit.note = note.strip()
        audit.blind_score = blind_score
        audit.blind = blind_score is not None and blind_score == score
        audit.answered_at = moment
        audit.seconds = elapsed_seconds(audit.served_at, moment)  # None when the clock went back
        audit.save(
            update_fields=[
                "score", "agreed", "reasoning_wrong", "note", "blind_score", "blind", "answered_at", "seconds",
            ]
        )
    return audit, True


def _repeats_saved(audit: Audit, *, score: int | None, agreed: bool, reasoning_wrong: bool, note: str) -> bool:
    """Whether a verdict, as the first answer would have saved it, is the audit's saved verdict."""
    try:
        final = _final_score(audit, score, agreed)
    except AuditError:  # a verdict that could not be saved is no repeat of one that was
        return False
    sent = (final, bool(agreed), bool(reasoning_wrong), note.strip())
    return sent == (audit.score, audit.agreed, audit.reasoning_wrong, audit.note)


def _final_score(audit: Audit, score: int | None, agreed: bool) -> int:
    """The verdict's score: the auditor's own, or when they agree the score of the judge's answer they were shown
    (``score`` may then be left out, or must equal it). Refused (AuditError) when agreeing has nothing to take."""
    if not agreed:
        if score is None:
            raise AuditError("give a score from 1 to 5, or agree with the judge's score", status=400, field="score")
        return score
    shown = audit.judgement
    if shown is None:
        raise AuditError("no judge's score was shown for this item: give your own score (1-5)", code="nothing_to_agree")
    if shown.score is None:
        what = (
            f"an NLI probability (p = {shown.probability:.3f}), not a 1-5 score"
            if shown.probability is not None
            else f"no score ({shown.get_status_display().lower()})"
        )
        raise AuditError(
            f"the answer of judge {shown.run.judge.name} has {what}: give your own score (1-5)",
            code="nothing_to_agree",
        )
    if score is not None and score != shown.score:
        raise AuditError(
            f"score {score} differs from the judge's score {shown.score} you agreed with: send one or the other",
            status=400,
            field="score",
        )
    return shown.score


def reasoning_refusal(audit: Audit) -> str:
    """Why "the reasoning is wrong" cannot be said of the answer shown for ``audit`` ("" when it can): the answer
    gives no reasoning (an NLI judge, a score-only judge, a failed answer), so the mark would be filed against a
    judge that said nothing to be wrong about."""
    shown = audit.judgement
    if shown is None:
        return "no judge's answer was shown for this item, so there is no reasoning to mark wrong"
    if (shown.reasoning or "").strip():
        return ""
    return (f"the answer of judge {shown.run.judge.name} shown for this item gives no reasoning, so it cannot be "
            "marked wrong (say what is wrong in the note)")


def _check_reasoning_wrong(audit: Audit, reasoning_wrong: bool) -> None:
    if reasoning_wrong and (why := reasoning_refusal(audit)):
        raise AuditError(why, status=400, field="reasoning_wrong")


def _clean_verdict(score: Any, agreed: bool, note: Any) -> tuple[int | None, str]:
    """The score and note of a verdict, checked before anything is looked up (400 on bad input)."""
    score = _clean_score(score)
    note = _clean_note(note)
    if not agreed and score is None:
        raise AuditError("give a score from 1 to 5, or agree with the judge's score", status=400, field="score")
    return score, note


def _clean_note(note: Any) -> str:
    note = note if isinstance(note, str) else ""
    if len(note) > MAX_NOTE:
        raise AuditError(f"note is {len(note)} characters long; at most {MAX_NOTE} are kept", status=400, field="note")
    return note


def own_answered_audit(project: Project, auditor: Any, audit_id: int, *, lock: bool = False) -> Audit:
    """The auditor's own answered audit in the project, to show or change. Refusals (AuditError): 403 not an
    auditor, 404 no such audit in the project, 403 another auditor's verdict, 409 no verdict saved yet."""
    check_auditor(project, auditor)
    found = Audit.objects.filter(item__project=project, pk=audit_id).select_related(
        "item__sample__passage", "item__flagged_by", "judgement__run__judge"
    )
    if lock:
        found = found.select_for_update(of=("self",))
    audit = found.first()
    if audit is None:
        raise AuditError(f"No audit {audit_id} in this project", status=404, code="no_such_audit")
    if audit.auditor_id != auditor.pk:
        raise AuditError(
            f"audit {audit_id} is another auditor's verdict: you may change only your own", status=403,
            code="not_your_audit",
        )
    if audit.answered_at is None:
        raise AuditError(
            "this audit holds no verdict yet: answer its item first (only a saved verdict can be changed)",
            code="not_answered",
        )
    return audit


def change_audit(
    project: Project,
    auditor: Any,
    audit_id: int,
    *,
    score: int | None,
    agreed: bool,
    reasoning_wrong: bool,
    note: str,
    seen: VerdictSeen | None = None,
) -> Audit:
    """Change the auditor's own saved verdict: score (or agreed), reasoning marked wrong, note.

    ``seen`` is the version of the verdict the change was made from (``verdict_stamp``: UNCHANGED, or its
    ``changed_at``): when it was changed since, VerdictChanged (409, nothing saved) with the verdict as saved now,
    rather than writing over a change made in another tab unseen; unless the verdict sent is the saved one (a retry
    whose answer was lost: nothing to write). None skips the check (scripts, API clients that send no version).

    The first answer's ``answered_at`` and ``seconds`` stay (the time to decide, not to correct); ``changed_at``
    says when the change was made, and ``blind`` is again whether the final score is the one given blind
    (``blind_score``, never changed). A verdict sent back as it is saved changes nothing, ``changed_at``
    included. Refusals (AuditError, nothing saved): those of :func:`own_answered_audit`, 400 bad input, 409
    nothing to agree with.
    """
    check_auditor(project, auditor)
    score, note = _clean_verdict(score, agreed, note)
    with transaction.atomic():
        audit = own_answered_audit(project, auditor, audit_id, lock=True)
        if _changed_since(audit, seen) and not _repeats_saved(
            audit, score=score, agreed=agreed, reasoning_wrong=reasoning_wrong, note=note
        ):
            raise _refuse_changed(audit, seen)
        return _save_change(audit, score=score, agreed=agreed, reasoning_wrong=reasoning_wrong, note=note)


VERDICT_PARTS = ("score", "agreed", "reasoning_wrong", "note")


def amend_audit(
    project: Project, auditor: Any, audit_id: int, *, seen: VerdictSeen | None = None, **changes: Any
) -> Audit:
    """Change only some parts of the auditor's own saved verdict (``changes``: any of VERDICT_PARTS); the others
    stay as saved, read under the row's lock so a concurrent change is not undone. ``seen``: as for
    :func:`change_audit` (a change from a stale view is refused, unless it leaves the saved verdict as it is).

    Agreeing (``agreed`` true without a score) takes the shown judge's score again. A score sent alone leaves
    ``agreed`` as saved, so a new score beside a saved agreement is refused (400 naming ``score``) rather than
    quietly ending the agreement. Otherwise the rules of :func:`change_audit`: the same checks and refusals,
    ``changed_at`` and ``blind`` the same way, no change no write.
    """
    unknown = set(changes) - set(VERDICT_PARTS)
    if unknown:
        raise TypeError(f"amend_audit() takes {', '.join(VERDICT_PARTS)}, not {', '.join(sorted(unknown))}")
    check_auditor(project, auditor)
    # The parts sent are checked before anything is looked up, as a whole verdict is.
    _clean_score(changes.get("score"))
    _clean_note(changes.get("note", ""))
    with transaction.atomic():
        audit = own_answered_audit(project, auditor, audit_id, lock=True)
        if _changed_since(audit, seen) and not _amend_repeats_saved(audit, changes):
            raise _refuse_changed(audit, seen)
        verdict = _merged_verdict(audit, changes)
        score, note = _clean_verdict(verdict["score"], verdict["agreed"], verdict["note"])
        return _save_change(audit, score=score, agreed=verdict["agreed"],
                            reasoning_wrong=verdict["reasoning_wrong"], note=note)


def _amend_repeats_saved(audit: Audit, changes: dict[str, Any]) -> bool:
    """Whether ``changes`` over the saved verdict leave it as it is (nothing a stale view would undo)."""
    try:
        verdict = _merged_verdict(audit, changes)
    except AuditError:  # a change that could not be saved is no repeat of the saved verdict
        return False
    return _repeats_saved(audit, **verdict)


def _merged_verdict(audit: Audit, changes: dict[str, Any]) -> dict[str, Any]:
    """The saved verdict with ``changes`` applied, as :func:`change_audit` takes it whole.

    The saved score is carried over only while it is the auditor's own: under a saved or sent agreement it is left
    out, so agreeing takes the shown judge's score (as a whole verdict with ``agreed`` and no score does).
    """
    agreed = bool(changes.get("agreed", audit.agreed))
    score = changes["score"] if "score" in changes else (None if agreed else audit.score)
    if "score" in changes and "agreed" not in changes and audit.agreed and score is not None:
        shown = audit.judgement.score if audit.judgement is not None else None
        if score != shown:
            raise AuditError(
                f"your saved verdict agrees with the judge's score {shown}: to give score {score} instead, send "
                f'"agreed": false with it (nothing was changed)',
                status=400, field="score",
            )
    return {
        "score": score,
        "agreed": agreed,
        "reasoning_wrong": bool(changes.get("reasoning_wrong", audit.reasoning_wrong)),
        "note": changes.get("note", audit.note),
    }


def _save_change(audit: Audit, *, score: int | None, agreed: bool, reasoning_wrong: bool, note: str) -> Audit:
    """Write a checked verdict over the locked, answered ``audit``: nothing when it is the saved one, else the
    verdict, ``blind`` again and ``changed_at`` (the first answer's time and seconds stay)."""
    score = _final_score(audit, score, agreed)
    if reasoning_wrong and not audit.reasoning_wrong:  # a mark saved before this check stays until unticked
        _check_reasoning_wrong(audit, reasoning_wrong)
    verdict = {"score": score, "agreed": bool(agreed), "reasoning_wrong": bool(reasoning_wrong), "note": note.strip()}
    if all(getattr(audit, name) == value for name, value in verdict.items()):
        return audit
    for name, value in verdict.items():
        setattr(audit, name, value)
    audit.blind = audit.blind_score is not None and audit.blind_score == score
    moment = clock.now()
    # changed_at is the verdict's version: it always moves forward, even when the clock did not (stood, went back).
    if audit.changed_at is not None and moment <= audit.changed_at:
        moment = audit.changed_at + timedelta(microseconds=1)
    audit.changed_at = moment
    audit.save(update_fields=[*verdict, "blind", "changed_at"])
    return audit
