"""The audit queue by the API: the next flagged output served to the auditor, with every judge's answer
(GET /api/projects/<slug>/audit/next/), and the first verdict on it (POST /api/audit-items/<id>/audits/: once; the
same verdict sent again is a retry answered 200, another one 409). Changing it afterwards: judging.api.audits.saved.
"""

from __future__ import annotations

from typing import Any

from django.urls import path, re_path
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.api.schema import id_in_path
from annotate.api.serializers import MAX_ID, ErrorSerializer
from annotate.models import Project
from judging import access
from judging.api.audits.responses import audit_result, refusal, timestamp
from judging.api.audits.serializers import (
    FOR_AUDITORS,
    AuditConflictSerializer,
    AuditItemSerializer,
    AuditRequestSerializer,
    AuditResultSerializer,
    JudgePanelSerializer,
)
from judging.api.lookups import NOT_A_SPAN_PROJECT, span_project_lookup
from judging.models import Audit
from judging.services import audits
from judging.services.audits import AuditError


def item_to_audit(audit: Audit, progress: dict[str, int]) -> dict[str, Any]:
    """A served item as AuditItemSerializer describes it: the texts, the first pass's sentence figures, the judges."""
    item = audit.item
    sample = item.sample
    latest = audits.latest_sample_judgements(sample)
    panels = audits.judge_panels(item, latest=latest)
    shading = audits.sentence_shading(item, latest)
    sentence_scores = None
    if shading is not None and shading["mismatch"] is None:
        sentences = audits.output_sentences(sample)
        sentence_scores = [
            float(shading["sentences"][index]["figure"]) if index in shading["sentences"] else None
            for index in range(len(sentences))
        ]
    shown = audit.judgement
    return {
        "item": item.pk,
        "sample": sample.pk,
        "external_id": sample.external_id,
        "generator": sample.generator,
        "reason": item.reason,
        "source": sample.passage.text,
        "output": sample.summary,
        "sentences": audits.output_sentences(sample),
        "sentence_scores": sentence_scores,
        "served_at": timestamp(audit.served_at),
        "shown_judgement": shown.pk if shown is not None else None,
        "agree_score": shown.score if shown is not None else None,
        "judges": [{key: panel[key] for key in JudgePanelSerializer().fields} for panel in panels],
        "progress": progress,
    }


class NextAuditView(APIView):
    @extend_schema(
        description="Your next flagged output to audit, with every judge's answer. Since the answer shows them, the "
        "audit page takes no blind score for that output afterwards (its judges were seen).",
        responses={
            200: AuditItemSerializer,
            204: OpenApiResponse(description="Nothing is left for you to audit in this project now."),
            400: NOT_A_SPAN_PROJECT,
            403: FOR_AUDITORS,
            404: OpenApiResponse(ErrorSerializer, description="No such span project among yours."),
        },
    )
    def get(self, request: Request, slug: str) -> Response:
        """Your next flagged output, worst first: the same one until you answer it; never one you audited."""
        project, _ = span_project_lookup(access.get_project_for_auditor, request.user, slug)
        try:
            audit = audits.serve_next_audit(project, request.user)
        except AuditError as error:
            return refusal(error)
        if audit is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        # The answer holds the judges' answers: from now on the page takes no blind score for this item.
        audits.judges_shown(request.user, audit.item_id)
        return Response(item_to_audit(audit, audits.audit_progress(project, request.user)))


class AuditVerdictView(APIView):
    @extend_schema(
        parameters=[id_in_path("audit item")],
        request=AuditRequestSerializer,
        responses={
            200: OpenApiResponse(
                AuditResultSerializer,
                description="A retry: you sent this verdict for this item already and it is your saved verdict. "
                "Nothing was changed (its `answered_at`, `seconds` and `changed_at` included); the body is the "
                "saved verdict, as the 201 gave it.",
            ),
            201: OpenApiResponse(AuditResultSerializer, description="Your verdict was recorded."),
            403: FOR_AUDITORS,
            404: OpenApiResponse(ErrorSerializer, description="No such audit item in a project of yours."),
            409: OpenApiResponse(
                AuditConflictSerializer,
                description="Nothing was recorded: you audited this item already with another verdict (change it with "
                "PATCH or PUT /api/audits/{id}/), it was not served to you (or your serve "
                "expired and went to another auditor), or you "
                "agreed with an answer that has no 1-5 score (see code).",
            ),
        },
    )
    def post(self, request: Request, id: str) -> Response:
        """Your verdict on the item served to you: a score 1-5, or agreed (the shown judge's score); once (change it
        afterwards with PATCH or PUT /api/audits/{id}/).

        Safe to retry: the same verdict sent again answers 200 with the saved one and changes nothing, so a client
        whose connection dropped after the verdict was recorded learns that it was."""
        item_id = int(id)
        if not 1 <= item_id <= MAX_ID:
            raise NotFound("No such audit item")
        # Who may audit first: an outsider's or an annotator's malformed verdict gets their 404 or 403, not a 400.
        item = access.get_audit_item_for_auditor(request.user, item_id)
        project: Project = item.project
        body = AuditRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        verdict = body.validated_data
        try:
            audit, recorded = audits.submit_audit(
                project, request.user, item.pk,
                score=verdict.get("score"), agreed=verdict["agreed"],
                reasoning_wrong=verdict["reasoning_wrong"], note=verdict.get("note", ""),
            )
        except AuditError as error:
            return refusal(error)
        return Response(audit_result(audit), status=status.HTTP_201_CREATED if recorded else status.HTTP_200_OK)


# Item ids as [0-9]{1,18}, like the other APIs': a longer number names no object (404, not 500).
urlpatterns = [
    path("projects/<slug:slug>/audit/next/", NextAuditView.as_view(), name="api-audit-next"),
    re_path(r"^audit-items/(?P<id>[0-9]{1,18})/audits/$", AuditVerdictView.as_view(), name="api-audit-verdict"),
]
