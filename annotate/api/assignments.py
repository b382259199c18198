"""A batch's annotators through the API (its project's admins): list the batch's assignments, and assign
annotators to its round 1 by username.

A thin layer over the service of the project page's "Assign" form (annotate.services.projects.assign_annotators):
the same rule (the project's annotators only), the same round (1; round 2 opens with /round-two/), and
assigning someone who holds the round already changes nothing. The page picks people from a list; a script
names them, so the usernames are resolved here and each one at fault is named (400, nothing assigned).
Unassigning and reassigning stay on the batch's annotators page.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate import access
from annotate.api.errors import field_error
from annotate.api.schema import BATCH_ID
from annotate.api.serializers import ErrorSerializer, FieldErrorsSerializer
from annotate.api.validation import RejectsUnknownFields
from annotate.models import Assignment, Batch, Membership
from annotate.services import projects

FOR_ADMINS = OpenApiResponse(ErrorSerializer, description="Only the project's admins assign annotators.")
PREFIX = "annotators: "  # how the service names its field in a refusal; the API names it as the key


class AssignRequestSerializer(RejectsUnknownFields):
    annotators = serializers.ListField(
        child=serializers.CharField(), allow_empty=False,
        help_text="Usernames (the exact spelling, else any case) of the project's annotators to give the batch's "
        "round 1; those who hold it already keep it as it is.",
    )


class BatchAssignmentSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    annotator = serializers.CharField(help_text="Their username.")
    round = serializers.IntegerField()
    status = serializers.CharField(help_text="`assigned` or `submitted`.")
    reopened = serializers.BooleanField(help_text="An admin re-opened this submitted round.")


class BatchAssignmentsSerializer(serializers.Serializer):
    batch = serializers.IntegerField()
    batch_name = serializers.CharField()
    added = serializers.ListField(
        child=serializers.CharField(), required=False,
        help_text="POST only: the usernames given round 1 by this request (not those who held it already).",
    )
    assignments = BatchAssignmentSerializer(many=True, help_text="Every assignment of the batch, by round and name.")


def _batch_for_admin(user: Any, pk: int) -> Batch:
    """The batch, for its project's admins: 404 where the caller may not see it, 403 for another role."""
    batch, role = access.get_batch_for_user(user, pk)
    if role != Membership.Role.ADMIN:
        raise PermissionDenied("Only the project's admins assign annotators")
    return batch


def _users_named(usernames: list[str]) -> list[AbstractBaseUser]:
    """The users the usernames name, in the order sent (each once); 400 naming every username that names nobody."""
    user_model = get_user_model()
    field = user_model.USERNAME_FIELD
    found: dict[int, AbstractBaseUser] = {}
    unknown = []
    for name in usernames:
        # The exact spelling first, then any case, as the members page finds people.
        user = user_model.objects.filter(**{field: name}).first() or user_model.objects.filter(
            **{f"{field}__iexact": name}).order_by("pk").first()
        if user is None:
            unknown.append(repr(name))
        else:
            found.setdefault(user.pk, user)
    if unknown:
        raise field_error("annotators", f"no user is called {', '.join(unknown)}; nothing was assigned")
    return list(found.values())


def _listing(batch: Batch, added: list[str] | None = None) -> dict[str, Any]:
    rows = Assignment.objects.filter(batch=batch).select_related("annotator").order_by("round", "annotator__username")
    answer: dict[str, Any] = {"batch": batch.pk, "batch_name": batch.name}
    if added is not None:
        answer["added"] = added
    answer["assignments"] = [
        {"id": row.pk, "annotator": row.annotator.get_username(), "round": row.round, "status": row.status,
         "reopened": row.reopened}
        for row in rows
    ]
    return answer


class BatchAssignmentsView(APIView):
    @extend_schema(parameters=[BATCH_ID], responses={200: BatchAssignmentsSerializer, 403: FOR_ADMINS})
    def get(self, request: Request, id: str) -> Response:
        """The batch's assignments, every round (admins), as its annotators page lists them."""
        return Response(_listing(_batch_for_admin(request.user, int(id))))

    @extend_schema(
        parameters=[BATCH_ID],
        request=AssignRequestSerializer,
        responses={
            200: BatchAssignmentsSerializer,
            400: OpenApiResponse(
                FieldErrorsSerializer,
                description="Nothing was assigned: `annotators` names every username that names no user, or the "
                "one who is not an annotator of the project.",
            ),
            403: FOR_ADMINS,
        },
    )
    def post(self, request: Request, id: str) -> Response:
        """Give the batch's round 1 to these annotators (admins), as the project page's Assign form does: all or
        nothing; someone who holds it already keeps it unchanged. Answers the batch's assignments and who was
        added."""
        batch = _batch_for_admin(request.user, int(id))
        body = AssignRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        users = _users_named(body.validated_data["annotators"])
        try:
            made = projects.assign_annotators(batch, users)
        except projects.ProjectError as refused:
            message = str(refused).removeprefix(PREFIX)
            raise field_error("annotators", f"{message}; give them the annotator role first (nothing was "
                                            "assigned)") from None
        added = [assignment.annotator.get_username() for assignment in made]
        return Response(_listing(batch, added), status=status.HTTP_200_OK)
