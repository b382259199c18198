"""The flags page of a project (admins): annotators' reports of broken samples or samples to skip."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotate import access
from annotate.models import Project, SampleFlag
from annotate.services import flags
from annotate.views import paging


def _render_flags(request: HttpRequest, project: Project, status: int = 200) -> HttpResponse:
    # Each list has its own page number; a Resolve posts with the page's query, so the lists come back on their pages.
    open_flags, resolved = flags.project_flags(project, request.GET.get("page"), request.GET.get("resolved_page"))
    template = "annotate/flags.html#flag_lists" if request.htmx else "annotate/flags.html"
    return render(request, template, {
        "project": project, "open_flags": open_flags, "resolved": resolved,
        "open_query": paging.page_query(request.GET), "resolved_query": paging.page_query(request.GET, "resolved_page"),
        "lists_query": request.GET.urlencode(),
    }, status=status)


@require_GET
@login_required
def flags_page(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.get_project_for_user(request.user, slug, admin=True)
    return _render_flags(request, project)


@require_POST
@login_required
def resolve_flag(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    project, _ = access.get_project_for_user(request.user, slug, admin=True)
    flag = get_object_or_404(SampleFlag.objects.select_related("sample"), pk=pk, sample__project=project)
    flags.resolve_flag(flag, request.user)
    if request.htmx:
        return _render_flags(request, project)
    messages.success(request, f"Flag on sample {flag.sample.external_id or flag.sample.pk} resolved.")
    query = request.GET.urlencode()  # back to the pages the lists were on
    return HttpResponseRedirect(reverse("flags", args=[project.slug]) + (f"?{query}" if query else ""))
