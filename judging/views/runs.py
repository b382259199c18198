"""A judge run's page (admins): its figures and judgements; its htmx fragment is the live progress row; its Cancel."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRefresh

from annotate.services.jobs import CancelRefused
from judging import access
from judging.models import Judge, Judgement, JudgeRun
from judging.models.judges import SCORE_LABELS
from judging.services import overview, runs

JUDGEMENTS_PER_PAGE = 50
NLI_STATUSES = [(Judgement.Status.OK, "Scored"), (Judgement.Status.ERROR, "Not scored (too long for a window)")]


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
    if run.judge.kind == Judge.Kind.NLI and run.scope != JudgeRun.Scope.IMPORTED:
        context["nli"] = overview.nli_run_figures(run)
    context |= {
        "figures": overview.run_figures(run),
        "status": status,
        # An NLI judge makes no call and parses no answer: its only failure is an output too long for a window.
        "statuses": NLI_STATUSES if context.get("nli") else Judgement.Status.choices,
        "page": page,
        "labels": SCORE_LABELS,
    }
    return render(request, "judging/run.html", context)


@require_POST
@login_required
def run_cancel(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Cancel a queued or running run (admins), back to the run's page (an htmx form, on the run's page or in the
    judges page's list, reloads the page it is on, with the message).

    The way out of a run no worker executes, which would otherwise say "Queued" for good and answer every retried
    start of the same run. A run that has already ended is left as it is, with a message saying how it ended.
    """
    run = access.get_run_to_cancel(request.user, slug, pk)
    try:
        runs.cancel_run(run, request.user)
    except CancelRefused as refusal:
        messages.error(request, f"Not cancelled: {refusal}")
    else:
        kept = f"{run.done} judgement{'' if run.done == 1 else 's'}"
        messages.success(request, f"Run {run.pk} is cancelled: it judges nothing more, even if a worker picks it up; "
                                  f"the {kept} it stored stay, and a new run of the judge reuses their answers.")
    if request.htmx:
        return HttpResponseClientRefresh()
    return HttpResponseRedirect(reverse("judging-run", args=[slug, run.pk]))


urlpatterns = [
    path("projects/<slug:slug>/judges/runs/<int:pk>/", run_page, name="judging-run"),
    path("projects/<slug:slug>/judges/runs/<int:pk>/cancel/", run_cancel, name="judging-run-cancel"),
]
