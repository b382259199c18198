"""Downloads of a span project's judgements and audits, as ``manage.py export_judgements`` writes them.

Streamed a line at a time through judging.services.export, so a big project's
export never sits whole in the web process. Who gets what is judging.access's
``get_project_for_export``: admins everything, auditors their own audits,
annotators nothing (they work blind). A choice that cannot be used (a format,
a run of another project, bom=1 with jsonl) is a 400 naming it, before any line
is sent. ``bom=1`` (the judges page's "For Excel (CSV only)", the "CSV for
Excel" links) starts a CSV download with the UTF-8 byte order mark.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.urls import path, reverse
from django.views.decorators.http import require_GET

from annotate.models import Project
from judging import access
from judging.models import JudgeRun
from judging.services.export import FORMATS, ExportRefused, ExportRequest, read_export_request


def streamed(export: ExportRequest) -> StreamingHttpResponse:
    """The download: JSONL or CSV as an attachment named after the project and what it holds."""
    response = StreamingHttpResponse(export.lines(), content_type=export.content_type)
    response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
    return response


def _download(request: HttpRequest, slug: str, what: str) -> HttpResponse:
    project, auditor = access.get_project_for_export(request.user, slug, what)
    try:
        export = read_export_request(project, what=what, format=request.GET.get("format", "jsonl"),
                                     run=request.GET.get("run"), auditor=auditor, bom=request.GET.get("bom"))
    except ExportRefused as refused:
        return HttpResponse(f"Not exported: {refused.field}: {refused}", status=400,
                            content_type="text/plain; charset=utf-8")
    return streamed(export)


@require_GET
@login_required
def judgements_download(request: HttpRequest, slug: str) -> HttpResponse:
    """?format=jsonl|csv&run=ID&bom=1 (no run: every run's judgements); the project's admins."""
    return _download(request, slug, "judgements")


@require_GET
@login_required
def audits_download(request: HttpRequest, slug: str) -> HttpResponse:
    """?format=jsonl|csv&bom=1: every answered audit for admins, an auditor's own for an auditor."""
    return _download(request, slug, "audits")


def export_context(project: Project) -> dict[str, Any]:
    """What the judges page's download section needs: the URLs, the formats and the runs to choose from: those over
    the project's samples (a synthetic set's run is refused: its figures are the set's tables)."""
    return {
        "export_judgements_url": reverse("judging-export-judgements", args=[project.slug]),
        "export_audits_url": reverse("judging-export-audits", args=[project.slug]),
        "export_formats": FORMATS,
        "export_runs": JudgeRun.objects.filter(project=project, synthetic_set__isnull=True).select_related("judge")
        .order_by("-created_at", "-id"),
    }


urlpatterns = [
    path("projects/<slug:slug>/judges/export/judgements/", judgements_download, name="judging-export-judgements"),
    path("projects/<slug:slug>/judges/export/audits/", audits_download, name="judging-export-audits"),
]
