"""The judge's endpoints: the next item, answers (with the following item) and undo.

The answer endpoint returns the judge's next item in the same response
(``next``), so the labeling page shows it without a second round trip.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.api.pairs.lookups import get_pairs_project, project_of_item_to_judge, project_to_judge, queue_refusal
from annotate.api.pairs.serializers import (
    NO_PROJECT,
    PROJECT_QUERY,
    REFUSED,
    PairConflictSerializer,
    PairJudgementRequestSerializer,
    PairJudgementResultSerializer,
    PairProjectQuerySerializer,
    PairToJudgeSerializer,
    PairUndoneSerializer,
)
from annotate.api.schema import id_in_path
from annotate.api.serializers import MAX_ID, ErrorSerializer
from annotate.api.validation import NO_BODY, NoBodySerializer
from annotate.models import PairJudgement
from annotate.services.pairs import queue


def _span(start: int | None, end: int | None) -> list[int] | None:
    return None if start is None or end is None else [start, end]


def item_to_judge(judgement: PairJudgement, progress: dict[str, int]) -> dict[str, Any]:
    item = judgement.item
    original = item.perturbed.original
    return {
        "id": item.pk,
        "original": original.text if original is not None else None,
        "perturbed": item.perturbed.text,
        "original_span": _span(item.original_start, item.original_end),
        "perturbed_span": [item.perturbed_start, item.perturbed_end],
        "other_spans": queue.other_spans(item),
        "original_words": item.original_words,
        "perturbed_words": item.perturbed_words,
        "served_at": serializers.DateTimeField().to_representation(judgement.served_at),
        "progress": progress,
    }


def _project_query(request: Request) -> str:
    query = PairProjectQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data["project"]


class NextPairView(APIView):
    @extend_schema(
        parameters=PROJECT_QUERY,
        responses={
            200: PairToJudgeSerializer,
            204: OpenApiResponse(description="Nothing is left for you to judge in this project now."),
            403: REFUSED,
            404: NO_PROJECT,
        },
    )
    def get(self, request: Request) -> Response:
        """Your next item: the same one until you answer it; an item is never served to you twice."""
        project = get_pairs_project(request.user, _project_query(request))
        try:
            judgement = queue.serve_next_item(project, request.user)
        except queue.PairQueueError as error:
            return queue_refusal(error)
        if judgement is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(item_to_judge(judgement, queue.judge_progress(project, request.user)))


class PairJudgementView(APIView):
    @extend_schema(
        parameters=[id_in_path("pair item")],
        request=PairJudgementRequestSerializer,
        responses={
            200: OpenApiResponse(
                PairJudgementResultSerializer,
                description="A retry: you answered this item with this label already, and that answer stands (not "
                "undone). Nothing new was recorded; the body is the 201's, with the answer as first recorded (its "
                "`seconds` and `answered_at`) and your current next item and progress.",
            ),
            201: OpenApiResponse(PairJudgementResultSerializer, description="Your answer was recorded."),
            403: REFUSED,
            404: OpenApiResponse(ErrorSerializer, description="No such pair item in a pairs project of yours."),
            409: OpenApiResponse(
                PairConflictSerializer,
                description="Nothing was recorded: you judged this item already with another label (undo is the "
                "way to change an answer: POST /api/pairs/undo/ while it is your last one, then answer again), it "
                "was not served to you, or your serve expired and its slot went to another judge (see code).",
            ),
        },
    )
    def post(self, request: Request, id: str) -> Response:
        """Answer H, N or ? on the item served to you; the answer carries your next item (``next``).

        Safe to retry: sending the same label again for an answer that stands answers 200 with it and records
        nothing, so a client whose connection dropped after the answer was recorded learns that it was."""
        item_id = int(id)
        if not 1 <= item_id <= MAX_ID:
            raise NotFound("No such pair item")
        try:  # who may answer first: an outsider's or an auditor's empty body gets their 404 or 403, not a 400
            project = project_of_item_to_judge(request.user, item_id)
        except queue.NotAJudge as error:
            return queue_refusal(error)
        body = PairJudgementRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            answered = queue.record_and_serve_next(project, request.user, item_id, body.validated_data["label"])
        except queue.NotAJudge as error:
            if error.status == 404:
                raise NotFound("No such pair item") from None
            return queue_refusal(error)
        except queue.PairQueueError as error:
            return queue_refusal(error)
        judgement = answered.judgement
        payload = {
            "item": judgement.item_id,
            "label": judgement.label,
            "seconds": judgement.seconds,
            "answered_at": serializers.DateTimeField().to_representation(judgement.answered_at),
            "next": item_to_judge(answered.next, answered.progress) if answered.next is not None else None,
            "progress": answered.progress,
        }
        return Response(payload, status=status.HTTP_201_CREATED if answered.recorded else status.HTTP_200_OK)


class UndoPairView(APIView):
    @extend_schema(
        parameters=PROJECT_QUERY,
        request=NO_BODY,
        responses={
            200: PairUndoneSerializer,
            403: REFUSED,
            404: NO_PROJECT,
            409: OpenApiResponse(
                PairConflictSerializer,
                description="You have no answer to undo in this project, or your last answer is in a closed "
                "round, whose answers are final.",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        """Take back your last answer in the project: the item comes back as your next one, unanswered, with the
        answer taken back (``taken_back``: its label). Takes no fields (the project is in the query)."""
        try:  # who may undo first: an outsider's stray field gets their 404, not a 400
            project = project_to_judge(request.user, _project_query(request))
        except queue.NotAJudge as error:
            return queue_refusal(error)
        NoBodySerializer(data=request.data).is_valid(raise_exception=True)
        try:
            judgement = queue.undo_last_judgement(project, request.user)
        except queue.PairQueueError as error:
            return queue_refusal(error)
        if judgement is None:
            return queue_refusal(queue.NothingToUndo("you have no answer to undo in this project"))
        undone = item_to_judge(judgement, queue.judge_progress(project, request.user))
        undone["taken_back"] = {"label": judgement.taken_back_label}
        return Response(undone)
