"""A judge run's page (admins): its figures and judgements; its htmx fragment is the live progress row."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET

from judging import access
from judging.models import Judgement
from judging.models.judges import SCORE_LABELS
from judging.services import overview

JUDGEMENTS_PER_PAGE = 50


@require_GET
@login_required
def run_page(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """The run's page; an htmx request (the progress row polling itself) gets only ``_run.html``'s progress."""
    run = access.get_run_for_admin(request.user, pk)
    if run.project.slug != slug:
        raise Http404("No such judge run in this project")
    context = {"project": run.project, "run": run}
    if request.htmx:
        return render(request, "judging/_run.html#progress", context)  # swapped inside its role="status" wrapper
    status = request.GET.get("status", "")
    if status not in Judgement.Status.values:
        status = ""
    page = Paginator(overview.run_judgements(run, status), JUDGEMENTS_PER_PAGE).get_page(request.GET.get("page"))
    context |= {
        "figures": overview.run_figures(run),
        "status": status,
        "statuses": Judgement.Status.choices,
        "page": page,
        "labels": SCORE_LABELS,
    }
    return render(request, "judging/run.html", context)


urlpatterns = [
    path("projects/<slug:slug>/judges/runs/<int:pk>/", run_page, name="judging-run"),
]
