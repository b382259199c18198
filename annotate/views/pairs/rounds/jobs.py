"""A round job's page (its progress, then the round it drew) and cancelling a job that never ends."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotate.models import Job
from annotate.services.pairs import rounds
from annotate.views.pairs.rounds.form import DEFAULTS
from annotate.views.pairs.rounds.page import pairs_project


@require_GET
@login_required
def round_job(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """The round job's progress; once it is done, the round's page (htmx polls get a client redirect)."""
    project, _ = pairs_project(request, slug, admin=True)
    job = get_object_or_404(Job, pk=pk, project=project, kind=Job.Kind.PAIR_ROUND)
    if job.status == Job.Status.DONE and job.options.get("round"):
        url = reverse("pairs-round", args=[project.slug, job.options["round"]])
        return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)
    parameters = {name: job.options[name] for name in DEFAULTS if job.options.get(name) is not None}
    # The round the job draws (a job queued before jobs kept it: the next one) says whether it draws at random.
    number = job.options.get("number") or rounds.next_round_number(project)
    context = {"project": project, "job": job, "round_one": number == 1, "wait": rounds.round_job_wait(job),
               "again": f"{reverse('pairs-round-new', args=[project.slug])}?{urlencode(parameters)}"}
    template = "annotate/pairs/round_job.html#job" if request.htmx else "annotate/pairs/round_job.html"
    return render(request, template, context)


@require_POST
@login_required
def round_job_cancel(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Cancel a queued or running round job (admins): it draws no round, and a new round may be started.

    The way out of a job no worker runs (none started, or it died), which would otherwise block every later
    round. A job that has already ended is left as it is, with a message saying how it ended. Back to the
    wizard when the form came from there (``back=wizard``), else to the job's page, which shows who cancelled.
    """
    project, _ = pairs_project(request, slug, admin=True)
    job = get_object_or_404(Job, pk=pk, project=project, kind=Job.Kind.PAIR_ROUND)
    try:
        rounds.cancel_round_job(job, request.user)
    except rounds.CancelRefused as refusal:
        messages.error(request, f"Not cancelled: {refusal}")
    else:
        messages.success(request, f"Job {job.pk} is cancelled: it draws no round. You can start a new round now.")
    if request.POST.get("back") == "wizard":
        url = reverse("pairs-round-new", args=[project.slug])
    else:
        url = reverse("pairs-round-job", args=[project.slug, job.pk])
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)
