"""The project page of a pairs project, and its admin controls: import, perturbation, settings, export."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect, trigger_client_event

from annotate import access
from annotate.models import Job, Project
from annotate.services import jobs
from annotate.services.pairs import configure, export, ingest, perturb
from annotate.services.pairs.overview import pair_project_overview
from annotate.uploads import UploadTooLarge, read_uploads

IMPORT_FORMATS = {
    "raw": "raw texts to perturb",
    "pairs": "FaithLab pair file",
    "hades": "HaDes release file",
}


# Sent with the status section's last poll (no job running any more): sections outside it refresh themselves.
JOBS_FINISHED_EVENT = "pair-jobs-finished"


def project_page(
    request: HttpRequest, project: Project, role: str, *, refused: configure.PairSettingsInvalid | None = None
) -> HttpResponse:
    """Called by annotate.views.annotation.project_detail for `pairs` projects (it has checked the role).

    htmx asks for one section by its id: ``pair-status`` polls itself while a job runs, and its answer once none
    runs carries the JOBS_FINISHED_EVENT; ``perturbation`` listens for it and asks for itself again, so its
    button and counts follow the finished job without a reload. ``refused``: the settings save that was refused,
    the page answering it (400) with the form as it was typed and each refusal beside its field.
    """
    context = {"project": project, "role": role, "import_formats": IMPORT_FORMATS,
               **pair_project_overview(project, request.user, role)}
    if context["is_admin"]:
        typed = request.POST if refused is not None else None
        context["settings_fields"] = configure.settings_fields(context["config"], typed, refused)
        context["settings_refused"] = refused
    if refused is not None:
        return render(request, "annotate/pairs/project.html", context, status=400)
    target = request.htmx.target if request.htmx else None
    if target == "pair-status" and context["sees_figures"]:
        response = render(request, "annotate/pairs/project.html#status", context)
        if not context["active_jobs"]:
            trigger_client_event(response, JOBS_FINISHED_EVENT)
        return response
    if target == "perturbation" and context["is_admin"]:
        return render(request, "annotate/pairs/project.html#perturbation", context)
    return render(request, "annotate/pairs/project.html", context)


def _back_to_project(request: HttpRequest, slug: str, anchor: str = "") -> HttpResponse:
    """Back to the project page (at ``anchor``), where the message of what was done is shown.

    From an htmx form on that very page, pointing the browser at the same address with another ``#anchor``
    would only scroll, never load the page: the message stayed unshown and the section unchanged. So htmx is
    told to reload as well (HX-Refresh beside HX-Redirect: it sets the address, then reloads).
    """
    path = reverse("project", args=[slug])
    url = path + anchor
    if not request.htmx:
        return HttpResponseRedirect(url)
    response = HttpResponseClientRedirect(url)
    if urlsplit(request.htmx.current_url_abs_path or "").path == path:
        response["HX-Refresh"] = "true"
    return response


def _pairs_project_for_admin(request: HttpRequest, slug: str) -> Project:
    return access.get_pairs_project_for_user(request.user, slug, admin=True)[0]


@require_POST
@login_required
def pairs_import(request: HttpRequest, slug: str) -> HttpResponse:
    project = _pairs_project_for_admin(request, slug)
    fmt = request.POST.get("format", "")
    try:
        files = read_uploads(request.FILES.getlist("files"), request=request)
    except UploadTooLarge as refused:
        for line in refused.page_messages():
            messages.error(request, line)
        return _back_to_project(request, project.slug, "#import")
    if fmt not in IMPORT_FORMATS:
        messages.error(request, f"Nothing was imported. format: {fmt!r} is not one of "
                                f"{', '.join(IMPORT_FORMATS)}.")
    elif not files:
        messages.error(request, "Nothing was imported. Choose at least one .jsonl file.")
    else:
        try:
            report = ingest.import_pairs(project, files, fmt, user=request.user,
                                         skip_existing=request.POST.get("skip_existing") == "on",
                                         consensus_as_label=request.POST.get("consensus_as_label") == "on")
        except ingest.PairImportFailed as failure:
            for line in failure.page_messages():
                messages.error(request, line)
            if failure.already_imported:
                messages.error(request, "To import the other rows, tick 'Leave out rows already imported'.")
        else:
            described = report.describe()
            messages.success(request, f"{described[:1].upper()}{described[1:]}.")
            for line in report.warnings():  # the API's import answers the same lines
                messages.warning(request, line)
    return _back_to_project(request, project.slug, "#import")


@require_POST
@login_required
def pairs_perturb(request: HttpRequest, slug: str) -> HttpResponse:
    project = _pairs_project_for_admin(request, slug)
    try:
        job = perturb.start_perturbation(project, request.user)
    except perturb.PerturbationError as error:
        messages.error(request, f"Perturbation not started: {error}")
    else:
        if job.status == Job.Status.FAILED:  # the broker refused its task: the job says why
            messages.error(request, f"Perturbation not started: {job.error}")
        else:
            messages.success(request, f"Perturbation started over {job.total} texts; its progress shows below.")
    return _back_to_project(request, project.slug)


@require_POST
@login_required
def perturbation_job_cancel(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Cancel a queued or running perturbation job (admins), so that a new perturbation can be started.

    The way out of a job no worker runs (none started, or it died and nothing resumed it), which would otherwise
    refuse every new perturbation. The originals it perturbed keep their texts and items. A job that has already
    ended is left as it is, with a message saying how it ended.
    """
    project = _pairs_project_for_admin(request, slug)
    job = get_object_or_404(Job, pk=pk, project=project, kind=Job.Kind.PERTURB)
    try:
        perturb.cancel_perturbation_job(job, request.user)
    except jobs.CancelRefused as refusal:
        messages.error(request, f"Not cancelled: {refusal}")
    else:
        messages.success(request, f"Job {job.pk} is cancelled; the originals it perturbed keep their texts. You can "
                                  "start a new perturbation now.")
    return _back_to_project(request, project.slug, "#perturbation")


@require_POST
@login_required
def pairs_settings(request: HttpRequest, slug: str) -> HttpResponse:
    project, role = access.get_pairs_project_for_user(request.user, slug, admin=True)
    try:
        configure.update_pair_settings(project, request.POST)
    except configure.PairSettingsInvalid as invalid:
        # The page again, not a redirect: the form keeps what was typed, each refusal beside its field.
        return project_page(request, project, role, refused=invalid)
    messages.success(request, "Pair settings saved.")
    return _back_to_project(request, project.slug, "#pair-settings")


@require_GET
@login_required
def pairs_export(request: HttpRequest, slug: str, fmt: str) -> HttpResponse:
    # A span project is 404 here as on every pairs page (its stream used to fail after the 200 was sent).
    project, _ = access.get_pairs_project_for_user(request.user, slug, roles=access.EXPORTER_ROLES)
    if fmt not in export.FORMATS:
        return HttpResponse(f"format: {fmt!r} is not one of {', '.join(export.FORMATS)}", status=404,
                            content_type="text/plain")
    try:
        lines = export.export_lines(project, fmt)  # checks every item before the first byte is sent
    except export.ExportError as error:
        messages.error(request, f"Nothing was exported: {error.detail}")
        return _back_to_project(request, project.slug, "#pair-export")
    # Streamed a line at a time: a big project's export never sits whole in the web process.
    response = StreamingHttpResponse(lines, content_type="application/jsonl; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-{fmt}.jsonl"'
    return response
