"""Batches through the API: an annotator submitting a re-opened round of a batch again, which freezes it; an admin
opening round 2 (reconciliation) or re-opening one annotator's frozen round with a reason.
Thin views: the batch is looked up through access, rounds opened through annotate.services.rounds and re-opened
or submitted through annotate.services.freeze, the services the project page's buttons use."""

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
    ReopenedRoundSerializer,
    ReopenRequestSerializer,
    RoundTwoOpenedSerializer,
    RoundTwoRequestSerializer,
    SubmitConflictSerializer,
    SubmitRoundSerializer,
    SubmittedRoundSerializer,
)
from annotate.models import Assignment, Batch, Membership
from annotate.services import freeze, rounds

FOR_ADMINS = OpenApiResponse(ErrorSerializer, description="Only the project's admins open and re-open rounds.")


def _batch_for_admin(user: Any, pk: str | None) -> Batch:
    """The batch, for its project's admins: 404 where the caller may not see it, 403 for another role."""
    batch, role = access.get_batch_for_user(user, int(pk or 0))
    if role != Membership.Role.ADMIN:
        raise PermissionDenied("Only the project's admins open and re-open rounds")
    return batch


class BatchViewSet(viewsets.GenericViewSet):
    """A batch: its annotators submit a re-opened round again; its admins open round 2 and re-open rounds."""

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

    @extend_schema(
        parameters=[BATCH_ID],
        request=RoundTwoRequestSerializer,
        responses={
            200: RoundTwoOpenedSerializer,
            403: FOR_ADMINS,
            409: OpenApiResponse(
                ErrorSerializer,
                description="Nothing was changed: round 2 is open already, the batch has fewer than two round-1 "
                "annotators, or some have not submitted round 1 (`detail` names them).",
            ),
        },
    )
    @action(detail=True, methods=["post"], url_path="round-two")
    def round_two(self, request: Request, pk: str | None = None) -> Response:
        """Open round 2 (reconciliation) of the batch (admins), as the project page's button does: once every
        round-1 annotator has submitted, each gets round 2 with copies of their round-1 spans, beside the others'
        round-1 work. Round 1 is then frozen for everyone; this cannot be undone."""
        batch = _batch_for_admin(request.user, pk)
        body = RoundTwoRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        reveal = body.validated_data["reveal"]
        try:
            opened = rounds.open_reconciliation_round(batch, reveal_names=reveal != "pseudonyms")
        except rounds.RoundError as refused:
            return Response({"detail": str(refused)}, status=status.HTTP_409_CONFLICT)
        return Response({"batch": batch.pk, "round": rounds.RECONCILIATION_ROUND, "reveal": reveal,
                         "annotators": sorted(assignment.annotator.get_username() for assignment in opened)})

    @extend_schema(
        parameters=[BATCH_ID],
        request=ReopenRequestSerializer,
        responses={
            200: ReopenedRoundSerializer,
            403: FOR_ADMINS,
            409: OpenApiResponse(
                ErrorSerializer,
                description="Nothing was changed: the annotator's round is not frozen, or a later round of the batch "
                "is open (round 1 is frozen for everyone once round 2 opens).",
            ),
        },
    )
    @action(detail=True, methods=["post"])
    def reopen(self, request: Request, pk: str | None = None) -> Response:
        """Re-open one annotator's frozen round of the batch (admins), with the reason, which is logged with who
        and when, as the project page's Re-open does. It stays open to them until they submit it again."""
        batch = _batch_for_admin(request.user, pk)
        body = ReopenRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        username, number = body.validated_data["annotator"], body.validated_data["round"]
        assignment = (
            Assignment.objects.select_related("batch", "annotator")
            .filter(batch=batch, annotator__username=username, round=number).first()
        )
        if assignment is None:
            raise field_error("annotator", f"{username!r} holds no round {number} of {batch.name}; nothing was changed")
        try:
            reopening = freeze.reopen_round(assignment, request.user, body.validated_data["reason"])
        except freeze.ReopenError as refused:
            if refused.field:
                raise field_error(refused.field, str(refused)) from None
            return Response({"detail": str(refused)}, status=status.HTTP_409_CONFLICT)
        reopened = reopening.assignment
        return Response({
            "batch": batch.pk, "round": reopened.round, "annotator": reopened.annotator.get_username(),
            "status": reopened.status, "reopened": reopened.reopened, "reason": reopening.reason,
            "reopened_by": request.user.get_username(), "reopened_at": reopening.reopened_at,
        })
