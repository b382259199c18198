"""The sample browser of a batch (admins, curators and auditors). A filter change re-renders the table only."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET
from django_htmx.http import HttpResponseClientRedirect

from annotate import access
from annotate.models import Membership
from annotate.services import browse
from annotate.taxonomy import CATEGORY_NAMES, SEVERITY
from annotate.views import paging


@require_GET
@login_required
def batch_samples(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """A page of the batch's samples with progress, worst labels and flags; ``?jump=N`` opens the Nth sample of the
    batch, whichever page shows it."""
    batch, role = access.get_batch_for_reviewer(request.user, slug, pk)
    context = {
        "project": batch.project, "batch": batch, "role": role, "query": request.GET,
        "worst_choices": [(code, CATEGORY_NAMES[code]) for code in sorted(SEVERITY, key=SEVERITY.get)],
        "done_choices": browse.DONE_FILTERS,
    }
    try:
        round = browse.parse_round(request.GET.get("round"))
        if "jump" in request.GET:
            url = reverse("sample", args=[slug, browse.sample_at(batch, request.GET["jump"])]) + f"?round={round}"
            return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)
        filters = browse.parse_filters(request.GET)
        context |= {
            "filters": filters,
            "page": browse.batch_samples(batch, round, filters, with_seconds=role == Membership.Role.ADMIN,
                                         page_number=request.GET.get("page")),
            # The page links keep the round and the filters.
            "page_query": paging.page_query(request.GET),
        }
    except browse.BadQuery as error:
        context["error"] = str(error)
    template = "annotate/batch_samples.html#samples" if request.htmx else "annotate/batch_samples.html"
    return render(request, template, context, status=400 if "error" in context else 200)
