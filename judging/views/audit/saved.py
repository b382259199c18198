"""Changing a saved verdict from the audit page (``u``): one of the auditor's own answered audits shown with its
saved verdict (GET), and the change (POST), which answers with the current item; another auditor's is 403.

The form carries the version of the verdict it shows (``base_changed_at``): a change from a stale tab (another tab
changed the verdict after this one drew it) is refused with 409, nothing saved, and the page shows the verdict as
saved now above the form, which keeps the change and now carries the new version, so Enter applies it over that one
and Esc keeps the saved one."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from annotate.views.members import HtmxHttpRequest
from judging.access import get_project_for_auditor
from judging.services import audits
from judging.services.audits import AuditError
from judging.views.audit.page import VerdictForm, audit_view, refused, saved_text


@never_cache
@require_http_methods(["GET", "POST"])
@login_required
def audit_answered(request: HtmxHttpRequest, slug: str, audit_id: str) -> HttpResponse:
    """One of the auditor's own answered audits (``u``): GET shows it with its saved verdict, POST changes that
    verdict and answers with the current item. Who may, before what was sent: another auditor's audit is 403."""
    project, role = get_project_for_auditor(request.user, slug)
    try:
        audit = audits.own_answered_audit(project, request.user, int(audit_id))
    except AuditError as failure:
        return refused(request, project, role, failure)
    if request.method == "GET":
        return audit_view(request, project, role, changing=audit)
    form = VerdictForm.read(request.POST)
    try:
        if form.error:
            raise AuditError(form.error, status=400, field="score")
        seen = None if form.base is None else audits.read_verdict_stamp(form.base)
        changed = audits.change_audit(
            project, request.user, audit.pk,
            score=form.score, agreed=form.agreed, reasoning_wrong=form.reasoning_wrong, note=form.note, seen=seen,
        )
    except audits.VerdictChanged as conflict:
        # The form keeps the auditor's change, now made from the verdict saved meanwhile: saving it again applies it
        # over that one, knowingly.
        form.base = audits.verdict_stamp(conflict.current)
        return refused(request, project, role, conflict, form=form, changing=conflict.current, conflict=True)
    except AuditError as failure:
        return refused(request, project, role, failure, form=form, changing=audit)
    if not request.htmx:
        messages.success(request, saved_text(changed, changed=True))
        return HttpResponseRedirect(reverse("judging-audit", args=[project.slug]))
    return audit_view(request, project, role, last=changed, last_changed=True)

