"""The "My audits" page (GET /projects/<slug>/audit/mine/): the auditor's saved verdicts, newest first, 50 a page,
narrowed by judge, score, disagreement and the reasoning mark (judging.services.audits.listing), each with a link to
change it on the audit page (its answered view, the one ``u`` opens: the same rules, a blind score kept as it was
first given). A verdict is found here whatever tab or browser saved it, where ``u`` knows only this tab's.

Project admins list every auditor's verdicts, ``?auditor=<id>`` narrowing them to one; they change only their own (a
verdict is its auditor's word: judging.services.audits.own_answered_audit)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from annotate.models import Membership
from annotate.views.members import HtmxHttpRequest
from judging.access import get_project_for_auditor
from judging.models.judges import SCORE_LABELS
from judging.services import audits

PER_PAGE = 50
FILTER_NAMES = ("judge", "score", "disagreements", "reasoning_wrong", "auditor")


@never_cache
@require_GET
@login_required
def my_audits(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The auditor's saved verdicts (an admin: every auditor's), newest first, a page at a time."""
    project, role = get_project_for_auditor(request.user, slug)
    every_auditor = role == Membership.Role.ADMIN
    filters, problems = audits.VerdictFilters.read(request.GET)
    verdicts = audits.saved_verdicts(project, request.user, filters, every_auditor=every_auditor)
    page = Paginator(verdicts, PER_PAGE).get_page(request.GET.get("page"))
    kept = {name: request.GET[name] for name in FILTER_NAMES if request.GET.get(name)}
    rows = [_row(project.slug, audit, request.user) for audit in page.object_list]
    context: dict[str, Any] = {
        "project": project,
        "role": role,
        "every_auditor": every_auditor,
        "page": page,
        "rows": rows,
        "filters": filters,
        "filtered": bool(kept),
        "problems": problems,
        "judges": audits.verdict_judges(project, request.user, every_auditor=every_auditor),
        "auditors": audits.verdict_auditors(project) if every_auditor else [],
        "scores": [{"value": score, "label": SCORE_LABELS[score]} for score in audits.listing.SCORES],
        "page_query": urlencode(kept),
        "audit_url": reverse("judging-audit", args=[project.slug]),
    }
    return render(request, "judging/my_audits.html", context)


def _row(slug: str, audit: Any, viewer: Any) -> dict[str, Any]:
    seen = audit.judgement
    return {
        "audit": audit,
        "sample": audit.item.sample,
        "judge": seen.run.judge if seen is not None else None,
        "seen": seen,
        "seen_text": audits.score_text(seen) if seen is not None else "",
        "label": SCORE_LABELS.get(audit.score, ""),
        # Only one's own verdict is changed (an admin's list shows every auditor's).
        "change_url": reverse("judging-audit-answered", args=[slug, audit.pk]) if audit.auditor_id == viewer.pk else "",
    }
