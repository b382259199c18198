"""The audit page as drawn: the auditor's current item (served if they hold none), or one of their answered audits
to change, with the verdict form, whole or as the ``audit_view`` partial for htmx; a refusal drawn with its
message; the line a saved or changed verdict leaves. Also the page's own view (GET /projects/<slug>/audit/)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from annotate.access import Forbidden
from annotate.models import Project
from annotate.views.members import HtmxHttpRequest
from judging.access import get_project_for_auditor
from judging.models import Audit
from judging.models.judges import SCORE_LABELS
from judging.services import audits
from judging.services.audits import AuditError
from judging.views.audit.session import AuditSession


@dataclass
class VerdictForm:
    """The verdict form as posted; echoed back when the verdict is refused."""

    score: int | None = None
    agreed: bool = False
    reasoning_wrong: bool = False
    note: str = ""
    error: str = ""
    # A change form's base_changed_at: the version of the saved verdict it was made from (audits.verdict_stamp);
    # None when the form sent none (a page from before it carried one: changed unchecked).
    base: str | None = None

    @classmethod
    def of(cls, audit: Audit) -> VerdictForm:
        """The saved verdict, to change it."""
        return cls(score=audit.score, agreed=audit.agreed, reasoning_wrong=audit.reasoning_wrong, note=audit.note,
                   base=audits.verdict_stamp(audit))

    @classmethod
    def read(cls, data: QueryDict) -> VerdictForm:
        form = cls(
            agreed=data.get("agreed", "") in ("1", "on", "true"),
            reasoning_wrong=data.get("reasoning_wrong", "") in ("1", "on", "true"),
            note=data.get("note", ""),
            base=data.get("base_changed_at"),
        )
        raw = data.get("score", "").strip()
        if raw:
            if raw in ("1", "2", "3", "4", "5"):
                form.score = int(raw)
            else:
                form.error = f"score must be a whole number from 1 to 5, not {raw!r}"
        return form


LEVELS = [{"value": level, "label": SCORE_LABELS[level]} for level in sorted(SCORE_LABELS)]


def _agree_with(audit: Audit) -> tuple[int | None, str]:
    """The score agreeing takes, and why agreeing is not possible when it is not."""
    shown = audit.judgement
    if shown is None:
        return None, "No judge's answer to agree with: give your own score."
    if shown.score is not None:
        return shown.score, ""
    if shown.probability is not None:
        return None, "The shown judge gives an NLI probability, not a 1-5 score: give your own score."
    return None, f"The shown judge's answer has no score ({shown.get_status_display().lower()}): give your own."


def audit_view(
    request: HtmxHttpRequest,
    project: Project,
    role: str,
    *,
    status: int = 200,
    notice: str = "",
    error: str = "",
    form: VerdictForm | None = None,
    form_item: int | None = None,
    last: Audit | None = None,
    last_changed: bool = False,
    changing: Audit | None = None,
    conflict: bool = False,
) -> HttpResponse:
    """The page (or its partial for htmx) with the auditor's current item, serving one if they hold none; or, with
    ``changing``, that answered audit of theirs with its saved verdict (or ``form``, refused) to change; with
    ``conflict``, ``changing`` is the verdict saved meanwhile elsewhere, shown above the form that keeps the change."""
    if changing is not None:
        return _change_view(request, project, role, changing, status=status, error=error, form=form,
                            conflict=conflict)
    session = AuditSession.load(request, project)
    if session.pause is not None:
        # Back to the current item from changing a saved verdict: its clock goes on from where it stopped.
        audits.resume_item_clock(project, request.user, session.pause)
        session.pause = None
        session.save(request, project)
    audit = audits.serve_next_audit(project, request.user, order=session.queue_order)
    context: dict[str, Any] = {
        "project": project,
        "role": role,
        "audit": audit,
        "blind": session.blind,
        "progress": audits.audit_progress(project, request.user),
        "notice": notice,
        "error": error,
        "last": last,
        "last_changed": last_changed,
        "last_change_url": _change_url(project, last) if last is not None else "",
        "levels": LEVELS,
        "page_url": reverse("judging-audit", args=[project.slug]),
        "blind_url": reverse("judging-audit-blind", args=[project.slug]),
        "queue_order": session.queue_order,
    }
    if audit is not None:
        hidden = session.hides(audit)
        if not hidden:
            audits.judges_shown(request.user, audit.item_id)
            if audit.item_id not in session.revealed:
                session.revealed.append(audit.item_id)
        session.save(request, project)
        blind_score = audits.blind_score_of(request.user, audit.item_id)  # the database's: a new session keeps it
        echo = form if form is not None and form_item == audit.item_id else VerdictForm(score=blind_score)
        # Blind: not even the number agreeing would take goes into the page before the auditor's own score.
        agree_score, agree_refusal = (None, "Give your own score first.") if hidden else _agree_with(audit)
        context.update(
            view=audits.item_view(audit.item, reveal=not hidden),
            hidden=hidden,
            blind_score=blind_score,
            form=echo,
            agree_score=agree_score,
            agree_refusal=agree_refusal,
            reasoning_refusal="" if hidden else audits.reasoning_refusal(audit),
            elapsed=max(0.0, (audits.clock.now() - audit.served_at).total_seconds()),
            submit_url=reverse("judging-audit-submit", args=[project.slug, audit.item_id]),
            reveal_url=reverse("judging-audit-reveal", args=[project.slug, audit.item_id]),
        )
    template = "judging/audit.html#audit_view" if request.htmx else "judging/audit.html"
    return render(request, template, context, status=status)


def _change_url(project: Project, audit: Audit) -> str:
    return reverse("judging-audit-answered", args=[project.slug, audit.pk])


def _change_view(
    request: HtmxHttpRequest, project: Project, role: str, audit: Audit, *, status: int, error: str,
    form: VerdictForm | None, conflict: bool = False,
) -> HttpResponse:
    """An answered audit of the auditor's, its judges shown (they saw them before saving), its saved verdict in the
    form: nothing is served, the session's blind state is left as it is (the item is answered), and the clock of the
    item the auditor holds stands still until they come back to it (see the package docstring)."""
    session = AuditSession.load(request, project)
    session.pause = audits.pause_item_clock(project, request.user, session.pause)
    session.save(request, project)
    agree_score, agree_refusal = _agree_with(audit)
    shown = form if form is not None else VerdictForm.of(audit)
    if shown.base is None:  # a refused form that carried no version: it now shows this verdict
        shown.base = audits.verdict_stamp(audit)
    context: dict[str, Any] = {
        "project": project,
        "role": role,
        "audit": audit,
        "changing": True,
        "blind": session.blind,
        "progress": audits.audit_progress(project, request.user),
        "error": error,
        "levels": LEVELS,
        "page_url": reverse("judging-audit", args=[project.slug]),
        "blind_url": reverse("judging-audit-blind", args=[project.slug]),
        "queue_order": session.queue_order,
        "view": audits.item_view(audit.item, reveal=True),
        "hidden": False,
        "blind_score": audit.blind_score,
        "form": shown,
        "agree_score": agree_score,
        "agree_refusal": agree_refusal,
        "reasoning_refusal": audits.reasoning_refusal(audit),
        "submit_url": _change_url(project, audit),
        # Changed elsewhere after this form was drawn: the saved verdict is shown as it is now, above the change.
        "conflict": audit if conflict else None,
        "conflict_label": SCORE_LABELS.get(audit.score, "") if conflict else "",
    }
    template = "judging/audit.html#audit_view" if request.htmx else "judging/audit.html"
    return render(request, template, context, status=status)


def refused(request: HtmxHttpRequest, project: Project, role: str, failure: AuditError, **extra: Any) -> HttpResponse:
    """A refusal from judging.services.audits: 404 and 403 as errors, else the page again with the message."""
    if failure.status == 404:
        raise Http404(failure.message)
    if failure.status == 403:
        raise Forbidden(failure.message)
    return audit_view(request, project, role, status=failure.status, error=f"Not saved: {failure.message}.", **extra)


@never_cache
@require_GET
@login_required
def audit_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The page with the auditor's current item. ``?order=worst`` or ``?order=shuffled`` chooses the order of the
    items served from now on, kept in the session (the item held stays); another value is named and changes nothing."""
    project, role = get_project_for_auditor(request.user, slug)
    asked = request.GET.get("order")
    if asked is None:
        return audit_view(request, project, role)
    if asked not in audits.QUEUE_ORDERS:
        return audit_view(request, project, role, status=400,
                          error=f"No queue order {asked!r}: choose worst (worst first) or shuffled.")
    session = AuditSession.load(request, project)
    session.choose_order(asked)
    session.save(request, project)
    request.session.save()  # at once, as the blind switch is: a request sent meanwhile reads the new order
    return audit_view(request, project, role, notice=ORDER_NOTICES[asked])


ORDER_NOTICES = {
    audits.WORST_FIRST: "Queue order: worst first (the flag's lowest score or p first), from your next item on.",
    audits.SHUFFLED: "Queue order: shuffled, in an order of your own that says nothing of the flag, from your next "
                     "item on.",
}


def saved_text(audit: Audit, *, changed: bool = False) -> str:
    """The line a saved (or, with ``changed``, a changed) verdict leaves on the page after a plain POST."""
    agreed = " (agreed with the judge)" if audit.agreed else ""
    # Audit.blind: the final score is the one given before the judges' answers were shown; blind_score that one.
    blind = ", given blind" if audit.blind else f", {audit.blind_score} given blind" if audit.blind_score else ""
    # seconds is None when the server clock went back between serve and answer (annotate.services.clock).
    first = "time" if audit.seconds is None else f"{audit.seconds:.1f} s"
    if changed:
        return f"Changed: score {audit.score}{agreed}{blind} (the first answer's {first} kept)."
    timed = "time on the item not known" if audit.seconds is None else f"{first} on the item (server time)"
    return f"Saved: score {audit.score}{agreed}{blind}, {timed}."
