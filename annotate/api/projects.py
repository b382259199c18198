"""Projects through the API: those the user may see, each one's batches (an annotator: their own) and its
exports. Thin views: objects are looked up through access, downloads built by annotate.api.exports."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import FileResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from annotate import access
from annotate.api.exports import ExportQuerySerializer, export_download
from annotate.api.serializers import BatchSerializer, ErrorSerializer, ProjectSerializer
from annotate.models import Membership, Project


def roles_of(user: Any) -> dict[int, str]:
    """The user's role in each project, for serializers that show less to annotators."""
    if not user.is_authenticated:
        return {}
    if user.is_superuser:
        return dict.fromkeys(Project.objects.values_list("pk", flat=True), Membership.Role.ADMIN)
    return dict(Membership.objects.filter(user=user).values_list("project_id", "role"))


class ProjectViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ProjectSerializer
    lookup_field = "slug"
    lookup_value_regex = "[-a-zA-Z0-9_]+"  # what <slug:...> matches on the other project URLs

    def get_queryset(self) -> QuerySet[Project]:
        return access.projects_for(self.request.user)

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        context["roles"] = roles_of(self.request.user)
        return context

    @extend_schema(responses=BatchSerializer(many=True))
    @action(detail=True, pagination_class=None)
    def batches(self, request: Request, slug: str | None = None) -> Response:
        project = self.get_object()
        batches = project.batches.all()
        if access.role_in(request.user, project) == Membership.Role.ANNOTATOR:
            batches = batches.filter(assignments__annotator=request.user).distinct()
        return Response(BatchSerializer(batches, many=True).data)

    @extend_schema(
        parameters=[ExportQuerySerializer],
        responses={
            (200, "application/jsonl"): OpenApiResponse(
                OpenApiTypes.STR,
                description="A download: application/jsonl for format=jsonl, pairs and hades, text/csv for csv "
                "(all UTF-8, streamed), application/zip of FaithBench batch files for faithbench.",
            ),
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/zip"): OpenApiTypes.BINARY,
            403: OpenApiResponse(ErrorSerializer, description="Only the project's admins and auditors export."),
        },
    )
    @action(detail=True)
    def export(self, request: Request, slug: str | None = None) -> StreamingHttpResponse | FileResponse:
        """The labeled dataset (admins and auditors): JSONL a sample a line, CSV a span a row, or FaithBench files;
        for a pairs project, its items in the pair or HaDes format."""
        project, _ = access.get_project_for_exporter(request.user, slug or "")
        return export_download(project, request.query_params)
