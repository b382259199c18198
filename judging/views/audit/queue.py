"""The audit page's queue actions: the verdict on the served item (``audit_submit``), the score given blind that
reveals the judges (``audit_reveal``, kept in the database by judging.services.audits.give_blind_score) and the
blind-mode switch (``audit_blind``); each answers with the page.

Each is POST only and login only, the login checked first (``login_then_page``): a form sent after the session
ended goes to the login page, which then leads back to the audit page. Its ``next`` is the page, never the address
posted to: after logging in the browser asks for ``next`` with a GET, which a POST-only address answers with 405."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from annotate.views.members import HtmxHttpRequest
from judging.access import get_project_for_auditor
from judging.services import audits
from judging.services.audits import AuditError
from judging.views.audit.page import VerdictForm, audit_view, refused, saved_text
from judging.views.audit.session import AuditSession

View = Callable[..., HttpResponse]


def login_then_page(view: View) -> View:
    """``login_required`` for the page's POST-only addresses: logged out, the login page, leading back to the audit
    page of the project (htmx gets 401 instead: config/session_guard.py)."""

    @wraps(view)
    def checked(request: HtmxHttpRequest, slug: str, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(reverse("judging-audit", args=[slug]))
        return view(request, slug, *args, **kwargs)

    return checked


@never_cache
@login_then_page
@require_POST
def audit_submit(request: HtmxHttpRequest, slug: str, item_id: str) -> HttpResponse:
    """The verdict on the item served to the auditor; answers with the next item."""
    project, role = get_project_for_auditor(request.user, slug)
    item = int(item_id)
    session = AuditSession.load(request, project)
    form = VerdictForm.read(request.POST)
    try:
        if form.error:
            raise AuditError(form.error, status=400, field="score")
        # A repeat of the saved verdict (Enter again after a network error lost the answer) is answered as saved.
        audit, _ = audits.submit_audit(
            project, request.user, item,
            score=form.score, agreed=form.agreed, reasoning_wrong=form.reasoning_wrong, note=form.note,
        )
    except AuditError as failure:
        return refused(request, project, role, failure, form=form, form_item=item)
    session.forget(item)
    session.save(request, project)
    if not request.htmx:
        messages.success(request, saved_text(audit))
        return HttpResponseRedirect(reverse("judging-audit", args=[project.slug]))
    return audit_view(request, project, role, last=audit)


@never_cache
@login_then_page
@require_POST
def audit_reveal(request: HtmxHttpRequest, slug: str, item_id: str) -> HttpResponse:
    """Blind mode: the auditor's own score, before the judges' answers; answers with them revealed."""
    project, role = get_project_for_auditor(request.user, slug)
    item = int(item_id)
    form = VerdictForm.read(request.POST)
    if form.error or form.score is None:
        failure = AuditError(form.error or "give your score (1-5) to see the judges' answers", status=400)
        return refused(request, project, role, failure, form=form, form_item=item)
    held = audits.serve_next_audit(project, request.user, order=AuditSession.load(request, project).queue_order)
    if held is None or held.item_id != item:
        failure = AuditError("this item is not the one served to you; here is your current item", code="not_served")
        return refused(request, project, role, failure)
    try:
        kept, _ = audits.give_blind_score(project, request.user, item, form.score)
    except AuditError as failure:
        return refused(request, project, role, failure, form=form, form_item=item)
    session = AuditSession.load(request, project)
    if item not in session.revealed:
        session.revealed.append(item)
    session.save(request, project)
    notice = ""
    if kept.score != form.score:
        # Written once: the judges were shown right after the first (another tab, a form sent twice).
        notice = (f"Your blind score for this output was given already ({kept.score}) and stays; "
                  f"your score {form.score} is chosen below.")
    if not request.htmx:
        if notice:
            messages.info(request, notice)
        return HttpResponseRedirect(reverse("judging-audit", args=[project.slug]))
    return audit_view(request, project, role, form=form, form_item=item, notice=notice)


@never_cache
@login_then_page
@require_POST
def audit_blind(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Switch blind mode on or off for this auditor in this project (kept in the session)."""
    project, role = get_project_for_auditor(request.user, slug)
    session = AuditSession.load(request, project)
    session.choose(request.POST.get("blind", "") in ("1", "on", "true"))
    session.save(request, project)
    # Stored now, not once the answer below is ready: a reload sent meanwhile reads the new choice.
    request.session.save()
    held = audits.serve_next_audit(project, request.user, order=session.queue_order)
    notice = ""
    if session.blind and held is not None and not session.hides(held):
        notice = "Blind mode is on: the judges' answers stay hidden from your next item on (this one's are shown already)."
    if not request.htmx:
        if notice:
            messages.info(request, notice)
        return HttpResponseRedirect(reverse("judging-audit", args=[project.slug]))
    return audit_view(request, project, role, notice=notice)

