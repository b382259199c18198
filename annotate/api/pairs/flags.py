"""Spammer flags (admins): list them, block the judge, lift the block, or dismiss the flag."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.api.pairs.lookups import Role, pairs_project_for
from annotate.api.pairs.serializers import (
    BlockRequestSerializer,
    BlockResultSerializer,
    FlagQuerySerializer,
    JudgeFlagSerializer,
    UnblockResultSerializer,
)
from annotate.api.schema import integer
from annotate.api.serializers import MAX_ID, ErrorSerializer
from annotate.api.validation import NO_BODY, NoBodySerializer
from annotate.models import JudgeFlag, Project
from annotate.pairmath import spam
from annotate.services.pairs import flags

FOR_ADMINS = OpenApiResponse(ErrorSerializer, description="Only the project's admins review spammer flags.")
FLAG_ID = OpenApiParameter("id", integer(1, MAX_ID), OpenApiParameter.PATH, description="The flag's id.")


def flag_payload(flag: JudgeFlag, blocked_judges: set[int]) -> dict[str, Any]:
    timestamp = serializers.DateTimeField().to_representation
    return {
        "id": flag.pk,
        "judge": flag.judge.get_username(),
        "rule": flag.rule,
        "rule_name": flag.get_rule_display(),
        "figures": flag.figures,
        "explanation": spam.explain(flag.rule, flag.figures),
        "status": flag.status,
        "created_at": timestamp(flag.created_at),
        "updated_at": timestamp(flag.updated_at),
        "reviewed_by": flag.reviewed_by.get_username() if flag.reviewed_by else None,
        "reviewed_at": timestamp(flag.reviewed_at) if flag.reviewed_at else None,
        "judge_blocked": flag.judge_id in blocked_judges,
    }


def _flag_for_admin(user: Any, slug: str, id: str) -> tuple[Project, JudgeFlag]:
    project, _ = pairs_project_for(user, slug, roles=(Role.ADMIN,))
    flag_id = int(id)
    flag = (
        JudgeFlag.objects.select_related("judge", "reviewed_by").filter(project=project, pk=flag_id).first()
        if 1 <= flag_id <= MAX_ID else None
    )
    if flag is None:
        raise NotFound("No such flag")
    return project, flag


def _blocked_ids(project: Project) -> set[int]:
    return set(project.blocked_judges.values_list("judge_id", flat=True))


class JudgeFlagListView(APIView):
    @extend_schema(parameters=[FlagQuerySerializer], responses={200: JudgeFlagSerializer(many=True), 403: FOR_ADMINS})
    def get(self, request: Request, slug: str) -> Response:
        """Flagged judges with the rule they tripped, its figures and the review status (admins).

        Every judge is checked again first, on everyone's answers as they are now."""
        project, _ = pairs_project_for(request.user, slug, roles=(Role.ADMIN,))
        query = FlagQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        flags.refresh_flags(project)
        found = JudgeFlag.objects.filter(project=project).select_related("judge", "reviewed_by")
        if "status" in query.validated_data:
            found = found.filter(status=query.validated_data["status"])
        blocked = _blocked_ids(project)
        return Response([flag_payload(flag, blocked) for flag in found])


class BlockJudgeView(APIView):
    @extend_schema(
        parameters=[FLAG_ID], request=BlockRequestSerializer, responses={200: BlockResultSerializer, 403: FOR_ADMINS}
    )
    def post(self, request: Request, slug: str, id: str) -> Response:
        """Block the flagged judge: no more items, their judgements stop counting, their items go back to the queue.

        A reason is required, as on the flags page: a body without one (or with only spaces) is 400 naming
        `reason`, and nothing changes."""
        project, flag = _flag_for_admin(request.user, slug, id)
        body = BlockRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        blocked = flags.block_judge(project, flag.judge, request.user, body.validated_data["reason"])
        flag.refresh_from_db()
        return Response({
            "flag": flag_payload(flag, _blocked_ids(project)),
            "items_recomputed": blocked.items_recomputed,  # type: ignore[attr-defined]
            "items_reopened": blocked.items_reopened,  # type: ignore[attr-defined]
        })


class UnblockJudgeView(APIView):
    @extend_schema(
        parameters=[FLAG_ID],
        request=NO_BODY,
        responses={
            200: UnblockResultSerializer,
            403: FOR_ADMINS,
            409: OpenApiResponse(ErrorSerializer, description="The flag's judge is not blocked; nothing was changed."),
        },
    )
    def post(self, request: Request, slug: str, id: str) -> Response:
        """Lift the block on the flag's judge: their answers count again and the items they judged are decided again.

        Any of the judge's flags reaches the block; their blocked flags become dismissed. Takes no fields."""
        project, flag = _flag_for_admin(request.user, slug, id)
        NoBodySerializer(data=request.data).is_valid(raise_exception=True)
        try:
            items_recomputed = flags.unblock_judge(project, flag.judge, request.user)
        except flags.FlagReviewError as error:
            return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
        flag.refresh_from_db()
        return Response({"flag": flag_payload(flag, _blocked_ids(project)), "items_recomputed": items_recomputed})


class DismissFlagView(APIView):
    @extend_schema(
        parameters=[FLAG_ID],
        request=NO_BODY,
        responses={
            200: JudgeFlagSerializer,
            403: FOR_ADMINS,
            409: OpenApiResponse(ErrorSerializer, description="The judge is blocked; their flag cannot be dismissed."),
        },
    )
    def post(self, request: Request, slug: str, id: str) -> Response:
        """The judge is fine: the flag stays dismissed unless their figures get worse. Takes no fields."""
        project, flag = _flag_for_admin(request.user, slug, id)
        NoBodySerializer(data=request.data).is_valid(raise_exception=True)
        try:
            flags.dismiss_flag(flag, request.user)
        except flags.FlagReviewError as error:
            return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
        flag.refresh_from_db()
        return Response(flag_payload(flag, _blocked_ids(project)))
