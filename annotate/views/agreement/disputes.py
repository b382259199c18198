"""The disputes of one batch: its samples whose annotators' worst labels differ, each linked to its sample page."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_GET

from annotate.models import Batch, Sample
from annotate.services import stats
from annotate.taxonomy import CATEGORY_NAMES
from annotate.views import paging
from annotate.views.figures import (
    BadQuery,
    _render,
    _url,
    get_project_for_results,
    parse_id,
    parse_round,
    parse_schemes,
)

DISPUTES_SCHEME = "C|B|Q|U"  # the disputes page's scheme when its query names none
DISPUTES_PER_PAGE = 100  # rows a page, as the sample browser shows


@require_GET
@login_required
def disputes_page(request: HttpRequest, slug: str) -> HttpResponse:
    """Samples of one batch whose annotators' worst labels differ, each linked to its sample page."""
    project, role = get_project_for_results(request.user, slug)
    known = stats.project_rounds(project)
    context: dict[str, Any] = {"project": project, "role": role,
                               "defaults": {"round": known[0] if known else "", "scheme": DISPUTES_SCHEME}}
    try:
        round = parse_round(request.GET.get("round"), known, default=known[0] if known else None)
        if round is None:
            raise BadQuery("round", "the project has no round with assignments yet")
        scheme = parse_schemes(request.GET.getlist("scheme") or [DISPUTES_SCHEME])[0]
        raw_batch = (request.GET.get("batch") or "").strip()
        batch_id = parse_id(raw_batch, "batch") if raw_batch else None
    except BadQuery as error:
        return _render(request, "annotate/disputes.html", context | {"error": str(error)}, status=400)
    if batch_id is None:
        # An address without a batch (typed, or kept from an old link): the page offers the project's batches.
        batches = list(project.batches.order_by("position", "id"))
        return _render(request, "annotate/disputes.html",
                       context | {"choosing": True, "batches": batches, "round": round, "scheme": scheme})
    batch = get_object_or_404(Batch, pk=batch_id, project=project)
    found = stats.batch_disputes(project, batch, round, scheme)  # one batch's rows: quick, always fresh
    # A page of the disputes is shown; only its samples' texts are read.
    pager = Paginator(found["disputed"], DISPUTES_PER_PAGE).get_page(request.GET.get("page"))
    details = {
        row["id"]: row
        for row in Sample.objects.filter(pk__in=[entry["sample_id"] for entry in pager]).values(
            "id", "position", "external_id", "generator", "summary"
        )
    }
    rows = [
        {
            "sample": details[entry["sample_id"]],
            "labels": [
                {"annotator": name, "code": code, "name": CATEGORY_NAMES[code]}
                for name, code in entry["labels"].items()
            ],
            "url": f"{reverse('sample', args=[project.slug, entry['sample_id']])}?round={round}",
        }
        for entry in pager
        if entry["sample_id"] in details
    ]
    context |= {
        "batch": batch,
        "round": round,
        "scheme": found["scheme"],
        "disputes": found,
        "rows": rows,
        "pager": pager,  # its paginator counts every disputed sample of the batch
        # The page links keep the batch, the round and the scheme.
        "page_query": paging.page_query(request.GET),
        "agreement_url": _url("agreement", project.slug, scheme=found["scheme"], round=round),
    }
    return _render(request, "annotate/disputes.html", context)
