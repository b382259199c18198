"""Batches through the API: an annotator submitting a re-opened round of a batch again, which freezes it.
Thin views: the batch is looked up through access, the round submitted through annotate.services.freeze."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from annotate import access
from annotate.api.errors import field_error, frozen_round
from annotate.api.schema import BATCH_ID
from annotate.api.serializers import (
    ErrorSerializer,
    SubmitConflictSerializer,
    SubmitRoundSerializer,
    SubmittedRoundSerializer,
)
from annotate.models import Membership
from annotate.services import freeze


class BatchViewSet(viewsets.GenericViewSet):
    """A batch, seen by one of its annotators: submitting a re-opened round again."""

    lookup_value_regex = "[0-9]{1,18}"

    @extend_schema(
        parameters=[BATCH_ID],
        request=SubmitRoundSerializer,
        responses={
            200: SubmittedRoundSerializer,
            403: OpenApiResponse(ErrorSerializer, description="Only the batch's annotators submit their rounds."),
            409: OpenApiResponse(
                SubmitConflictSerializer,
                description="Nothing was changed: the round is frozen already (`frozen` is true), is not re-opened, "
                "or has samples not marked done (`not_done` lists them).",
            ),
        },
    )
    @action(detail=True, methods=["post"])
    def submit(self, request: Request, pk: str | None = None) -> Response:
        """Submit your re-opened round of the batch again, which freezes it; every sample must be marked done.

        Marking samples done never submits a re-opened round: only this (the page's Submit again) does.
        """
        batch, role = access.get_batch_for_user(request.user, int(pk or 0))
        if role != Membership.Role.ANNOTATOR:
            raise PermissionDenied("Only the batch's annotators submit their rounds")
        body = SubmitRoundSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            assignment = freeze.submit_round_again(batch, request.user, round=body.validated_data["round"])
        except freeze.NotAssigned as error:
            raise field_error("round", str(error)) from None
        except freeze.RoundFrozen as frozen:
            return frozen_round(frozen)
        except freeze.SubmitError as refused:
            answer: dict[str, Any] = {"detail": str(refused)}
            if refused.not_done:
                answer["not_done"] = refused.not_done
            return Response(answer, status=status.HTTP_409_CONFLICT)
        return Response({"batch": batch.pk, "round": assignment.round, "status": assignment.status,
                         "submitted_at": assignment.submitted_at})
