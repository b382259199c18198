"""The agreement page: sample-level alpha per scheme, per batch and pairwise, and span agreement on request
(``section=spans``); stale figures shown with their age while a task refreshes them."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotate import agreement
from annotate.services import stats
from annotate.views.agreement.people import FEW_SPAN_SHARE, FEW_SPANS
from annotate.views.agreement.query import PAGE_BOOTSTRAP, read_agreement_query
from annotate.views.agreement.tables import (
    LOW_ALPHA,
    agreement_context,
    serve_agreement,
    serve_spans,
    span_context,
)
from annotate.views.figures import (
    DEFAULT_SCHEMES,
    SHOWN,
    BadQuery,
    _freshness,
    _nothing_newer,
    _render,
    _url,
    get_project_for_results,
)


@require_GET
@login_required
def agreement_page(request: HttpRequest, slug: str) -> HttpResponse:
    project, role = get_project_for_results(request.user, slug)
    known = stats.project_rounds(project)
    context: dict[str, Any] = {
        "project": project,
        "role": role,
        "known_rounds": known,
        "levels": agreement.LEVELS,
        "aggregates": agreement.AGGREGATES,
        "default_schemes": DEFAULT_SCHEMES,
        "low_alpha": LOW_ALPHA,
        "few_spans": FEW_SPANS,
        "few_span_percent": round(100 * FEW_SPAN_SHARE),
        "form": {
            "scheme": ", ".join(request.GET.getlist("scheme")) or ", ".join(DEFAULT_SCHEMES),
            "level": request.GET.get("level", ""),
            "aggregate": request.GET.get("aggregate", "") or "pooled",
            "round": request.GET.get("round", ""),
            "bootstrap": request.GET.get("bootstrap", "") or PAGE_BOOTSTRAP,
        },
        # What a field shows when the URL leaves its parameter out, for history-forms.js after a Back.
        "defaults": {"scheme": ", ".join(DEFAULT_SCHEMES), "aggregate": "pooled", "bootstrap": PAGE_BOOTSTRAP},
    }
    try:
        query = read_agreement_query(request.GET, known)
    except BadQuery as error:
        return _render(request, "annotate/agreement.html", context | {"error": str(error)}, status=400)
    context |= {"query": query, "back": _url("agreement", project.slug, **query.params()).partition("?")[2]}
    section = request.GET.get("section", "")
    if section not in ("", "spans"):
        return _render(request, "annotate/agreement.html", context | {"error": f"section: unknown section {section!r}; "
                                                                      "use spans or leave it out"}, status=400)
    if not query.rounds:
        return _render(request, "annotate/agreement.html", context)
    if section == "spans":
        served = serve_spans(project, query)
        if _nothing_newer(request, served):
            return HttpResponse(status=204)
        poll = _url("agreement", project.slug, **query.params(section="spans", **{SHOWN: served.version}))
        context |= span_context(served.value, query) | {
            "show_spans": True, "span_freshness": _freshness(request, served, poll, "span-agreement"),
        }
        if request.htmx:
            return render(request, "annotate/agreement.html#spans", context)
    served = serve_agreement(project, query)
    if _nothing_newer(request, served):
        return HttpResponse(status=204)
    poll = _url("agreement", project.slug, **query.params(**{SHOWN: served.version}))
    context |= agreement_context(project, served.value, query, role) | {
        "freshness": _freshness(request, served, poll, "agreement-results"),
    }
    return _render(request, "annotate/agreement.html", context)
