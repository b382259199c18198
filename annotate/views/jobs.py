"""A project's job line (its progress, polled by the project page) and cancelling a span project's embedding or export
job that no worker runs."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRefresh

from annotate import access
from annotate.models import Job, Project
from annotate.services import export, jobs, reembedding
from annotate.services.pages import job_lines


@require_GET
@login_required
def job_status(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """The job's line alone: its progress, how long it has waited when no worker seems to run it, and its Cancel
    for those who may cancel it. Shown to the roles the project page shows that kind of job to, as the API's job
    endpoint (access.get_job_for_user): 404 for outsiders, 403 for another member."""
    job = access.get_job_for_user(request.user, slug, pk)
    project = job.project
    role = access.role_in(request.user, project)
    if project.kind == Project.Kind.SPANS:  # as the span project page shows it; a pairs page words its jobs' waits
        job_lines([job], role)
    # The progress element alone: the poll swaps it inside its role="status" wrapper, which stays on the page.
    return render(request, "annotate/_job.html#progress", {"job": job, "project": project})


# What each kind of job keeps once cancelled, for the page's message.
CANCELLED_WORDS = {
    Job.Kind.EMBED: "the texts it embedded keep their vectors; `manage.py embed --project {slug}` embeds the rest",
    Job.Kind.EXPORT: "it writes no file, even if a worker picks it up later; the export can be started again",
}


@require_POST
@login_required
def job_cancel(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Cancel a span project's queued or running embedding or export job (admins), back to the project page (the
    page reloads itself when the line's htmx form asked).

    The way out of a job no worker runs (none started, or it died and nothing resumed it), which would otherwise
    say "Queued" for good. A job that has already ended is left as it is, with a message saying how it ended.
    """
    job = access.get_job_for_canceller(request.user, slug, pk)
    cancel = reembedding.cancel_embedding_job if job.kind == Job.Kind.EMBED else export.cancel_export_job
    try:
        cancel(job, request.user)
    except jobs.CancelRefused as refusal:
        messages.error(request, f"Not cancelled: {refusal}")
    else:
        kept = CANCELLED_WORDS[job.kind].format(slug=slug)
        messages.success(request, f"Job {job.pk} ({job.get_kind_display().lower()}) is cancelled: {kept}.")
    if request.htmx:
        # The form sits in the project page's job line: reload that page, with the message. (An HX-Redirect to the
        # same page with another #fragment would only scroll: htmx sets location.href, which does not reload.)
        return HttpResponseClientRefresh()
    url = reverse("project", args=[slug]) + ("#exports" if job.kind == Job.Kind.EXPORT else "#progress")
    return HttpResponseRedirect(url)
