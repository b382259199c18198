"""htmx pages. Thin: look up through access, write through services, render."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotate import access
from annotate.models import Assignment, Job, Project
from annotate.services import export, freeze, ingest, projects, rounds
from annotate.services.pages import annotation_page_data, project_overview
from annotate.services.pairs.guidelines import pair_guidelines
from annotate.services.pairs.overview import judge_rows
from annotate.taxonomy import hotkey_labels
from annotate.uploads import UploadTooLarge, read_uploads
from annotate.views import paging
from annotate.views.pairs import labeling as pairs_labeling
from annotate.views.pairs import project as pairs_project


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    work = projects.batch_progress_page(request.user, request.GET.get("page"))
    member_of = access.projects_for(request.user)
    pair_work = judge_rows(pairs_labeling.projects_to_label(request.user), request.user)
    return render(
        request,
        "annotate/home.html",
        {
            "work": work,  # a page of the annotator's assignments; its paginator counts them all
            "page_query": paging.page_query(request.GET),
            # A judge of pairs projects only has no batch to wait for: no "No batch is assigned to you yet".
            "show_batches": bool(work.paginator.count) or not pair_work
            or member_of.filter(kind=Project.Kind.SPANS).exists(),
            "projects": member_of,
            "pair_work": pair_work,
            "can_create": request.user.is_staff,
        },
    )


# What each kind of project is for, shown beside its choice on the new-project page.
PROJECT_KIND_HELP = {
    Project.Kind.SPANS: "Annotators mark unsupported spans in summaries beside their source (FaithBench batches or "
                        "samples JSONL).",
    Project.Kind.PAIRS: "Judges label replaced spans in perturbed texts as hallucination or not, in rounds a "
                        "detector helps choose (HaDes: raw texts to perturb, ready pairs or HaDes files).",
}


@require_http_methods(["GET", "POST"])
@login_required
def project_create(request: HttpRequest) -> HttpResponse:
    """Make a project of either kind, its creator as admin, and open its page, where its data is imported."""
    if not request.user.is_staff:
        raise PermissionDenied("Only site staff create projects")
    error = None
    kind = request.POST.get("kind", Project.Kind.SPANS)
    if request.method == "POST":
        try:
            project = projects.create_project(
                request.POST.get("name", ""), slug=request.POST.get("slug") or None, owner=request.user, kind=kind
            )
        except projects.ProjectError as failure:
            error = str(failure)
        else:
            return HttpResponseRedirect(reverse("project", args=[project.slug]))
    shown = kind if kind in Project.Kind.values else Project.Kind.SPANS  # a refused kind: the default, not none
    kinds = [{"value": value, "label": label, "help": PROJECT_KIND_HELP[value], "checked": value == shown}
             for value, label in Project.Kind.choices]
    return render(request, "annotate/project_new.html", {"error": error, "kinds": kinds},
                  status=400 if error else 200)


@require_GET
@login_required
def project_detail(request: HttpRequest, slug: str) -> HttpResponse:
    project, role = access.get_project_for_user(request.user, slug)
    if project.kind == Project.Kind.PAIRS:
        return pairs_project.project_page(request, project, role)
    context = {"project": project, "role": role,
               **project_overview(project, request.user, role, request.GET.get("page"))}
    # The Batches section polls its own page of batches while a job runs; the page links keep any other parameter.
    context["progress_url"] = request.get_full_path()
    context["page_query"] = paging.page_query(request.GET)
    if request.htmx and request.htmx.target == "progress":
        return render(request, "annotate/project.html#progress", context)
    return render(request, "annotate/project.html", context)


@require_POST
@login_required
def project_import(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.get_project_for_user(request.user, slug, admin=True)
    try:
        files = read_uploads(request.FILES.getlist("files"), request=request)
    except UploadTooLarge as refused:
        for line in refused.page_messages():
            messages.error(request, line)
        return _back_to_project(request, project.slug)
    if not files:
        messages.error(request, "Choose at least one FaithBench .json or samples .jsonl file.")
    else:
        roster = ingest.parse_roster(request.POST.get("roster", ""))
        try:
            report = ingest.import_files(project, files, roster=roster, created_by=request.user,
                                         annotators=request.POST.get("annotators") or ingest.BY_NAME,
                                         allow_repeats=bool(request.POST.get("allow_repeats")))
        except ingest.ImportProblems as failure:
            for line in failure.page_messages():  # each problem its own message (file, line, field)
                messages.error(request, line)
            if failure.repeats:
                messages.error(request, "To import these samples again as new copies on purpose, tick "
                                        "'Allow repeats'.")
        except ingest.ImportFailed as error:
            messages.error(request, f"Nothing was imported. {error}")
        else:
            described = report.describe()
            messages.success(request, f"{described[:1].upper()}{described[1:]}.")
            for line in report.warnings():  # the API's import answers the same lines
                messages.warning(request, line)
    return _back_to_project(request, project.slug)


@require_POST
@login_required
def project_assign(request: HttpRequest, slug: str) -> HttpResponse:
    """Assign annotators to one batch (chosen by name) or spread them evenly over all batches."""
    project, _ = access.get_project_for_user(request.user, slug, admin=True)
    try:
        if request.POST.get("batch"):
            batch = get_object_or_404(project.batches, pk=request.POST["batch"])
            users = get_user_model().objects.filter(pk__in=request.POST.getlist("annotators"))
            made = len(projects.assign_annotators(batch, users))
            messages.success(request, f"{made} assignment{pluralize(made)} made.")
        else:
            raw = (request.POST.get("per_batch") or "").strip()
            if raw and not raw.isdigit():
                raise projects.ProjectError(f"per_batch: annotators per batch must be a whole number, not {raw!r}")
            filled = projects.assign_batches_evenly(project, int(raw) if raw else None)
            messages.success(request, filled.describe())
            if (warning := filled.warning()) is not None:
                messages.warning(request, warning)
    except (projects.ProjectError, ValueError) as error:
        messages.error(request, str(error))
    return _back_to_project(request, project.slug)


def _back_to_project(request: HttpRequest, slug: str) -> HttpResponse:
    url = reverse("project", args=[slug])
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)


@require_GET
@login_required
def guidelines(request: HttpRequest, slug: str) -> HttpResponse:
    """What members read: a span project's labels and text; a pairs project's text, or the default judges read
    while it has none of its own (its span labels are unused there)."""
    project, _ = access.get_project_for_user(request.user, slug)
    if project.kind == Project.Kind.PAIRS:
        text, default = pair_guidelines(project)
        context = {"project": project, "pairs": True, "guidelines": text, "default_guidelines": default}
    else:
        context = {"project": project, "labels": hotkey_labels(project.taxonomy), "guidelines": project.guidelines}
    return render(request, "annotate/guidelines.html", context)


@require_GET
@login_required
@never_cache
def sample_page(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """The annotation page. It carries the annotator's spans and done state in its page data, so it is never cached:
    the browser's Back would otherwise show a copy from before the spans and the done mark were saved."""
    sample, role = access.get_sample_for_user(request.user, pk)
    if sample.project.slug != slug:
        return HttpResponseRedirect(reverse("sample", args=[sample.project.slug, sample.pk]))
    raw_round = request.GET.get("round", "")
    if raw_round and not raw_round.isdigit():
        return HttpResponse(f"round: {raw_round!r} is not a round number", status=400)
    data = annotation_page_data(sample, request.user, role, int(raw_round) if raw_round else None)
    return render(request, "annotate/sample.html", {"sample": sample, "project": sample.project, "page": data,
                                                    "role": role})


@require_POST
@login_required
def project_export(request: HttpRequest, slug: str) -> HttpResponse:
    """Queue an export; the project page shows its progress and a download link."""
    project, _ = access.get_project_for_exporter(request.user, slug)
    raw_round = request.POST.get("round", "1")
    options = export.ExportOptions(
        format=request.POST.get("format", ""),
        round=int(raw_round) if raw_round.isdigit() else -1,
        pseudonyms=request.POST.get("pseudonyms") == "on",
        bom=request.POST.get("bom") == "on",
    )
    try:
        job = export.start_export(project, options, request.user)
    except export.ExportError as error:
        messages.error(request, f"Export not started: {error}")
    else:
        if job.status == Job.Status.FAILED:  # the broker refused its task: the job says why
            messages.error(request, f"Export not started: {job.error}")
        else:
            messages.success(request, "Export started; the download link appears below when it is ready.")
    return _back_to_project(request, project.slug)


@require_GET
@login_required
def export_download(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    project, _ = access.get_project_for_exporter(request.user, slug)
    job = get_object_or_404(Job, pk=pk, project=project, kind=Job.Kind.EXPORT, status=Job.Status.DONE)
    path = export.exports_dir() / str(job.pk)
    result = path / job.result_path.rsplit("/", 1)[-1]
    if not job.result_path or not result.is_file():
        raise Http404("The export file is gone; start the export again")
    options = export.ExportOptions.of_job(job.options)
    # Sent as the API sends the same export: the file's suffix alone says nothing of JSONL or of its encoding.
    return FileResponse(result.open("rb"), as_attachment=True, filename=export.download_name(project, options),
                        content_type=export.CONTENT_TYPES[options.format])


@require_POST
@login_required
def open_round_two(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Open reconciliation for a batch whose round-1 annotators have all submitted."""
    project, _ = access.get_project_for_user(request.user, slug, admin=True)
    batch = get_object_or_404(project.batches, pk=pk)
    try:
        rounds.open_reconciliation_round(batch, reveal_names=request.POST.get("reveal") != "pseudonyms")
    except rounds.RoundError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"Round 2 is open for {batch.name}; its annotators see each other's round-1 work.")
    return _back_to_project(request, project.slug)


@require_POST
@login_required
def reopen_round(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Let one annotator change their frozen round again; the reason goes into the log."""
    project, _ = access.get_project_for_user(request.user, slug, admin=True)
    assignment = get_object_or_404(Assignment.objects.select_related("batch", "annotator"), pk=pk,
                                   batch__project=project)
    try:
        freeze.reopen_round(assignment, request.user, request.POST.get("reason", ""))
    except freeze.ReopenError as error:
        messages.error(request, f"Not re-opened. {error}")
    else:
        messages.success(request, f"Round {assignment.round} of {assignment.batch.name} is open again for "
                                  f"{assignment.annotator.username} until they submit it.")
    return _back_to_project(request, project.slug)


@require_POST
@login_required
def project_settings(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.get_project_for_user(request.user, slug, admin=True)
    projects.update_project_settings(project, reveal_generator=request.POST.get("reveal_generator") == "on")
    messages.success(request, "Settings saved.")
    return _back_to_project(request, project.slug)
