"""A project's members through the API (its admins): list them, add an existing user with a role, change a role,
remove a member.

Thin views over the members page's services (annotate.services.members), so the page's rules hold here too: a
project keeps an admin, an annotator holding open assignments keeps their role until those are handed on, and a
member with work in an open assignment is not removed (their unstarted assignments go with them). Bad input is a
400 naming the field; a refused change is a 409 saying who and what; outsiders 404, other
roles 403, anonymous callers 401. Where the page's words point at its own forms ("create them under ... below"),
the API says it its own way (the service names the fault: MemberError.reason).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate import access
from annotate.api.serializers import ErrorSerializer
from annotate.api.validation import RejectsUnknownFields
from annotate.models import Membership, Project
from annotate.services import members
from annotate.services.members import MemberError

FOR_ADMINS = OpenApiResponse(ErrorSerializer, description="Only the project's admins manage its members.")
REFUSED = OpenApiResponse(
    ErrorSerializer,
    description="Nothing was changed: the change would leave the project without an admin, or the member holds "
    "open assignments (with work, for a removal) to unassign or reassign on the batch's page first; `detail` says "
    "who and which.",
)
USERNAME = OpenApiParameter(
    "username", str, OpenApiParameter.PATH,
    description="The member's username (the exact spelling first, then any case, as the members page finds people).",
)


@extend_schema_field({"type": "string", "enum": list(Membership.Role.values)})
class RoleField(serializers.CharField):
    """A role, as sent: the members service checks it and words a refusal as the page does."""


class MemberAssignmentSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    batch = serializers.IntegerField(help_text="The batch's id.")
    batch_name = serializers.CharField()
    round = serializers.IntegerField()
    status = serializers.CharField(help_text="`assigned` or `submitted`.")
    reopened = serializers.BooleanField(help_text="An admin re-opened this submitted round; it is open until "
                                                  "submitted again.")


class MemberSerializer(serializers.Serializer):
    username = serializers.CharField()
    role = RoleField()
    can_log_in = serializers.BooleanField(
        help_text="False for someone invited or imported who has not chosen a password yet."
    )
    assignments = MemberAssignmentSerializer(
        many=True, help_text="The member's rounds of the project's batches (span projects; empty in a pairs project)."
    )
    answers_given = serializers.IntegerField(
        required=False, help_text="Pairs projects only: the answers they gave, a blocked judge's too."
    )
    judge_blocked = serializers.BooleanField(
        required=False, help_text="Pairs projects only: an admin blocked them as a judge."
    )


class MemberAddSerializer(RejectsUnknownFields):
    username = serializers.CharField(
        allow_blank=True, help_text="An existing user (any case); new users are made on the members page."
    )
    role = RoleField(allow_blank=True, help_text="Their role; a member already gets this role instead.")


class MemberChangeSerializer(RejectsUnknownFields):
    required_when_partial = {"role": "send the role to give them"}  # the schema's PATCH body requires it too

    role = RoleField(allow_blank=True)


class MemberRemovedSerializer(serializers.Serializer):
    username = serializers.CharField()
    assignments_dropped = serializers.IntegerField(
        help_text="Their open assignments that held no work, which went with them (their submitted ones stay and "
        "keep counting)."
    )


def member_payload(project: Project, row: dict[str, Any]) -> dict[str, Any]:
    """One row of the members page's table as the API shows it."""
    payload = {
        "username": row["user"].get_username(),
        "role": row["membership"].role,
        "can_log_in": row["can_log_in"],
        "assignments": [
            {"id": assignment.pk, "batch": assignment.batch_id, "batch_name": assignment.batch.name,
             "round": assignment.round, "status": assignment.status, "reopened": assignment.reopened}
            for assignment in row["assignments"]
        ],
    }
    if project.kind == Project.Kind.PAIRS:
        payload.update(answers_given=row["answers_given"], judge_blocked=row["blocked"])
    return payload


def _member_of(project: Project, membership: Membership) -> dict[str, Any]:
    row = next(row for row in members.project_member_rows(project) if row["membership"].pk == membership.pk)
    return member_payload(project, row)


def _in_api_words(error: MemberError) -> dict[str, list[str]]:
    """The 400's fields and messages: the page's words, except where they point at the page's own forms (an
    unknown username's "create them under ... below"), which a script cannot see."""
    if error.reason == members.UNKNOWN_USER:
        return {"username": [f"no user is called {error.value!r}; the API adds existing users only: an admin creates "
                             "users on the project's members page (Create a user), then add them here"]}
    if error.reason == members.UNKNOWN_ROLE:
        roles = Membership.Role.values
        return {"role": [f"{error.value!r} is not a role; send one of {', '.join(roles[:-1])} or {roles[-1]}"]}
    return error.problems


def _refused(error: MemberError) -> Response:
    """Bad input (the fields at fault) is a 400; a refused change a 409."""
    if error.problems:
        raise ValidationError(_in_api_words(error))
    return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)


class MemberListView(APIView):
    @extend_schema(responses={200: MemberSerializer(many=True), 403: FOR_ADMINS})
    def get(self, request: Request, slug: str) -> Response:
        """The project's members with their roles, as the members page lists them (admins)."""
        project, _ = access.get_project_for_user(request.user, slug, admin=True)
        return Response([member_payload(project, row) for row in members.project_member_rows(project)])

    @extend_schema(
        request=MemberAddSerializer,
        responses={
            201: MemberSerializer,
            200: OpenApiResponse(MemberSerializer, description="They were a member already: their role is now the "
                                                               "one sent."),
            403: FOR_ADMINS,
            409: REFUSED,
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        """Give an existing user a role in the project (admins): 201 with the new member, or 200 when they were a
        member already and their role changed (the members page's "Add an existing user")."""
        project, _ = access.get_project_for_user(request.user, slug, admin=True)
        body = MemberAddSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            added = members.add_or_change_member(project, body.validated_data["username"], body.validated_data["role"])
        except MemberError as error:
            return _refused(error)
        answer = status.HTTP_201_CREATED if added.created else status.HTTP_200_OK
        return Response(_member_of(project, added.membership), status=answer)


class MemberDetailView(APIView):
    @extend_schema(
        parameters=[USERNAME], request=MemberChangeSerializer,
        responses={200: MemberSerializer, 403: FOR_ADMINS, 409: REFUSED},
    )
    def patch(self, request: Request, slug: str, username: str) -> Response:
        """Change a member's role (admins); the last admin keeps theirs, and an annotator's open assignments must be
        handed on first."""
        membership = access.get_member_by_username_for_admin(request.user, slug, username)
        body = MemberChangeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            members.change_role(membership, body.validated_data["role"])
        except MemberError as error:
            return _refused(error)
        return Response(_member_of(membership.project, membership))

    @extend_schema(
        parameters=[USERNAME], request=None,
        responses={200: MemberRemovedSerializer, 403: FOR_ADMINS, 409: REFUSED},
    )
    def delete(self, request: Request, slug: str, username: str) -> Response:
        """Take a member out of the project (admins): their open assignments without work go with them, their
        submitted ones stay; refused while an open assignment holds their work, and for the last admin."""
        membership = access.get_member_by_username_for_admin(request.user, slug, username)
        name = membership.user.get_username()
        try:
            dropped = members.remove_member(membership)
        except MemberError as error:
            return _refused(error)
        return Response({"username": name, "assignments_dropped": dropped})
