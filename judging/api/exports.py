"""Downloads through the API: a span project's judgements and audits, as the judges page and the
``export_judgements`` command give them (judging.services.export, streamed).

Who gets what is judging.access's ``get_project_for_export``, as on the pages: admins everything, auditors their own
audits (judgements 403), annotators 403 (they work blind), outsiders 404, anonymous callers 401; a pairs project
400 on ``project`` to its members (judging.api.lookups).
A choice that cannot be used is a 400 ``{"field": ["message"]}`` before any line is sent; an empty one too
(``?format=``), rather than the default (annotate.api.validation.QueryParamsSerializer).
``bom=1`` starts a CSV download with the UTF-8 byte order mark, for Excel, as the span export's ``bom`` does (and is
refused the same way with jsonl).
"""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.views import APIView

from annotate.access import AnyUser
from annotate.api.errors import field_error
from annotate.api.exports import BOM_HELP
from annotate.api.serializers import MAX_ID, ErrorSerializer
from annotate.api.validation import QueryParamsSerializer
from annotate.models import Project
from annotate.services.export import bom_refusal
from judging import access
from judging.api.lookups import NOT_A_SPAN_PROJECT_OR_BAD_INPUT, span_project_lookup
from judging.services.export import FORMATS, ExportRefused, read_export_request
from judging.views.exports import streamed

FORMAT_HELP = "jsonl: one object a line, with the keys the judgement import reads; csv: a header, then a row a line."
FORMAT_ERRORS = {"invalid_choice": '"{input}" is not a format: choose ' + " or ".join(FORMATS)}


class AuditExportQuerySerializer(QueryParamsSerializer):
    format = serializers.ChoiceField(choices=list(FORMATS), default="jsonl", help_text=FORMAT_HELP,
                                     error_messages=FORMAT_ERRORS)
    bom = serializers.BooleanField(default=False, help_text=BOM_HELP)

    def validate_bom(self, value: bool) -> bool:
        # Read from the query as sent: the format may itself be refused, and this problem still comes with it.
        if value and (refusal := bom_refusal(str(self.initial_data.get("format", "jsonl")))) is not None:
            raise serializers.ValidationError(refusal)
        return value


class JudgementExportQuerySerializer(AuditExportQuerySerializer):
    """The audits' query and, for judgements only, one run."""

    run = serializers.IntegerField(
        min_value=1, max_value=MAX_ID, required=False, help_text="Only this judge run's judgements (its id); "
        "without it, every run's."
    )


def _download(project: Project, auditor: AnyUser | None, what: str, body: dict[str, Any]) -> StreamingHttpResponse:
    run = body.get("run")
    try:
        export = read_export_request(project, what=what, format=body["format"],
                                     run=None if run is None else str(run), auditor=auditor,
                                     bom="1" if body["bom"] else None)
    except ExportRefused as refused:
        raise field_error(refused.field, str(refused)) from None
    return streamed(export)


DOWNLOAD = {
    (200, "application/jsonl"): OpenApiResponse(
        OpenApiTypes.STR, description="A download, streamed: application/jsonl for format=jsonl, text/csv for csv "
        "(both UTF-8)."
    ),
    (200, "text/csv"): OpenApiTypes.STR,
}


class JudgementExportView(APIView):
    @extend_schema(
        parameters=[JudgementExportQuerySerializer],
        responses={
            **DOWNLOAD,
            400: NOT_A_SPAN_PROJECT_OR_BAD_INPUT,
            403: OpenApiResponse(ErrorSerializer, description="Only the project's admins export judgements "
                                 "(auditors export their own audits; annotators work blind)."),
        },
    )
    def get(self, request: Request, slug: str) -> StreamingHttpResponse:
        """The project's judgements (admins): every run's, or one run's; where each came from and what it said
        (status, score or p, reasoning, raw answer, error, latency, tokens, cost)."""
        # 404/403 (or a pairs project's 400) before a bad query's 400
        project, auditor = span_project_lookup(access.get_project_for_export, request.user, slug, "judgements")
        query = JudgementExportQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return _download(project, auditor, "judgements", query.validated_data)


class AuditExportView(APIView):
    @extend_schema(
        parameters=[AuditExportQuerySerializer],
        responses={
            **DOWNLOAD,
            400: NOT_A_SPAN_PROJECT_OR_BAD_INPUT,
            403: OpenApiResponse(ErrorSerializer, description="Only the project's admins and auditors export audits "
                                 "(annotators work blind)."),
        },
    )
    def get(self, request: Request, slug: str) -> StreamingHttpResponse:
        """The project's answered audits: every auditor's for an admin, your own for an auditor (score, agreed,
        reasoning marked wrong, note, seconds, blind and the score given blind, the judge's score you were shown,
        when it was answered and last changed)."""
        project, auditor = span_project_lookup(access.get_project_for_export, request.user, slug, "audits")
        query = AuditExportQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return _download(project, auditor, "audits", query.validated_data)


urlpatterns = [
    path("projects/<slug:slug>/judgements/export/", JudgementExportView.as_view(), name="judging-api-export-judgements"),
    path("projects/<slug:slug>/audits/export/", AuditExportView.as_view(), name="judging-api-export-audits"),
]
