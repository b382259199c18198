"""Spans through the API: list, read, create, change and delete them, each write carrying the version last
read (a stale one gets 409 with the current span). Thin views: spans are looked up through access, written
through annotate.services.spans."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotate import access
from annotate.api.errors import as_field_errors, field_error, frozen_round
from annotate.api.samples import NO_PROJECT_OR_SAMPLE, span_project_of_member
from annotate.api.schema import SPAN_CONFLICT, SPAN_EXISTS_OR_FROZEN, SPAN_FIELD_ERRORS, SPAN_ID, VERSION_QUERY
from annotate.api.serializers import (
    MAX_VERSION,
    SpanListQuerySerializer,
    SpanSerializer,
    SpanUpdateSerializer,
    SpanWriteSerializer,
)
from annotate.models import Membership, Sample, SpanAnnotation
from annotate.services import freeze, spans


@extend_schema_view(
    list=extend_schema(
        parameters=[SpanListQuerySerializer],
        responses={200: SpanSerializer(many=True), 404: NO_PROJECT_OR_SAMPLE},
    ),
    retrieve=extend_schema(parameters=[SPAN_ID]),
    destroy=extend_schema(
        parameters=[SPAN_ID, VERSION_QUERY], responses={204: None, 400: SPAN_FIELD_ERRORS, 409: SPAN_CONFLICT}
    ),
)
class SpanViewSet(
    mixins.CreateModelMixin, mixins.RetrieveModelMixin, mixins.UpdateModelMixin,
    mixins.DestroyModelMixin, mixins.ListModelMixin, viewsets.GenericViewSet,
):
    """Spans you may see: your own, and every span of a project you administer, audit or curate. The list filters
    them by ?project=, ?sample= and ?round=. Writes carry the version last read; a stale one gets 409 with the
    current span. A refused write names every field at fault in one 400."""

    serializer_class = SpanSerializer
    lookup_value_regex = "[0-9]{1,18}"
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[SpanAnnotation]:
        user = self.request.user
        mine = SpanAnnotation.objects.filter(annotator=user)
        if user.is_superuser:
            return access.with_assigned(SpanAnnotation.objects.select_related("annotator")).order_by("id")
        # Curators too: they adjudicate from these spans and read them all on /api/samples/<id>/spans/.
        admin_projects = Membership.objects.filter(
            user=user, role__in=[Membership.Role.ADMIN, Membership.Role.AUDITOR, Membership.Role.CURATOR]
        ).values("project_id")
        # Each with ``assigned``: a reviewer also sees the stored spans of someone no longer assigned.
        return access.with_assigned(
            (mine | SpanAnnotation.objects.filter(sample__project_id__in=admin_projects)).select_related("annotator")
        ).order_by("id")

    def filter_queryset(self, queryset: QuerySet[SpanAnnotation]) -> QuerySet[SpanAnnotation]:
        """The list's ``?project=``, ``?sample=`` and ``?round=``: they narrow the spans the caller may see.

        Filters only narrow get_queryset, so the visibility rules hold whatever is asked (an annotator still sees
        their own spans alone). A project or sample the caller may not see is the 404 of one that does not
        exist; a bad value is a 400 naming each parameter at fault.
        """
        if self.action != "list":
            return queryset
        query = SpanListQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        options = query.validated_data
        if "project" in options:
            queryset = queryset.filter(sample__project=span_project_of_member(self.request.user, options["project"]))
        if "sample" in options:
            sample, _ = access.get_sample_for_user(self.request.user, options["sample"])
            queryset = queryset.filter(sample=sample)
        if "round" in options:
            queryset = queryset.filter(round=options["round"])
        return queryset

    @extend_schema(
        request=SpanWriteSerializer,
        responses={
            201: SpanSerializer,
            200: OpenApiResponse(
                SpanSerializer,
                description="The same span (offsets, labels, note and source link) was already saved: the stored one.",
            ),
            400: SPAN_FIELD_ERRORS,
            409: SPAN_EXISTS_OR_FROZEN,
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """A new span. One 400 names every field at fault (types, unknown fields, offsets, labels, round), and
        nothing is saved; a caller who may not write spans at all gets 403 first."""
        body = SpanWriteSerializer(data=request.data)
        valid = body.is_valid()
        data = dict(body.validated_data) if valid else body.accepted_values()
        problems: dict[str, list[str]] = {} if valid else as_field_errors(body.errors)
        sample = _sample_to_write(request.user, data.pop("sample", None), problems)
        if problems:
            if sample is not None:  # the values that passed, checked against the sample as the save would
                _, more = spans.check_new_span(sample, request.user, **data, refused=problems)
                problems |= {field: messages for field, messages in more.items() if field not in problems}
            raise ValidationError(problems)
        try:
            span = spans.create_span(sample, request.user, **data)
        except spans.SpanError as error:
            raise ValidationError(error.problems) from None
        except freeze.RoundFrozen as frozen:
            return frozen_round(frozen, round_sent=data["round"], round_left_out=_left_out(request, "round"))
        except spans.SpanExists as exists:
            return Response(
                {"detail": str(exists), "existing": exists.existing.pk, "current": SpanSerializer(exists.existing).data},
                status=status.HTTP_409_CONFLICT,
            )
        # The same span saved twice is stored once: the repeat answers 200 with the stored span.
        code = status.HTTP_200_OK if getattr(span, "duplicate", False) else status.HTTP_201_CREATED
        span.assigned = True  # its author holds the round: create_span refuses anyone else
        return Response(SpanSerializer(span).data, status=code)

    @extend_schema(
        parameters=[SPAN_ID],
        request=SpanUpdateSerializer,
        responses={
            200: OpenApiResponse(
                SpanSerializer,
                description="The span as stored. A change to the values it already has saves nothing and keeps "
                "its version.",
            ),
            400: SPAN_FIELD_ERRORS,
            409: SPAN_CONFLICT,
        },
    )
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        span = access.get_span_for_user(request.user, int(kwargs["pk"]))
        body = SpanUpdateSerializer(data=request.data, partial=True)
        if not body.is_valid():
            # Every field at fault in one 400: the values that passed are checked against the span too.
            problems = as_field_errors(body.errors)
            changes = body.accepted_values()
            _, more = spans.check_span_changes(span, changes, version=changes.pop("version", None), refused=problems)
            raise ValidationError(problems | {field: messages for field, messages in more.items()
                                              if field not in problems})
        changes = dict(body.validated_data)
        version = changes.pop("version")  # required even in a PATCH (SpanUpdateSerializer.required_when_partial)
        try:
            span = spans.update_span(span, version=version, changes=changes)
        except spans.SpanError as error:
            raise ValidationError(error.problems) from None
        except spans.StaleVersion as stale:
            return self._conflict(stale)
        except freeze.RoundFrozen as frozen:
            return frozen_round(frozen)
        except freeze.NotAssigned as left:  # get_span_for_user refused it first; the service checks again
            raise access.Forbidden(str(left)) from None
        states = getattr(span.sample, "viewer_assignments", None)  # the author's rounds, read with the span
        if states is not None:
            span.assigned = span.round in states.rounds
        return Response(SpanSerializer(span).data)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.partial_update(request, *args, **kwargs)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        span = access.get_span_for_user(request.user, int(kwargs["pk"]))
        raw = request.query_params.get("version", request.data.get("version") if hasattr(request.data, "get") else None)
        try:
            version = int(raw)
        except (TypeError, ValueError):
            raise field_error("version", "send the version you last read") from None
        if not 1 <= version <= MAX_VERSION:
            raise field_error("version", f"{raw!r} is not a version number; send the version you last read")
        try:
            spans.delete_span(span, version=version)
        except spans.StaleVersion as stale:
            return self._conflict(stale)
        except freeze.RoundFrozen as frozen:
            return frozen_round(frozen)
        except freeze.NotAssigned as left:
            raise access.Forbidden(str(left)) from None
        return Response(status=status.HTTP_204_NO_CONTENT)

    @staticmethod
    def _conflict(stale: spans.StaleVersion) -> Response:
        if stale.current is None:
            # Deleted (in another tab) while this request was on its way: the answer the request gets when it comes
            # a moment later, as for any span that does not exist (it cannot be told from one that never did).
            raise NotFound("No such span")
        return Response({"detail": str(stale), "current": SpanSerializer(stale.current).data},
                        status=status.HTTP_409_CONFLICT)


def _sample_to_write(user: Any, pk: int | None, problems: dict[str, list[str]]) -> Sample | None:
    """The sample a new span goes on, for an annotator of its batch; one not found is added to ``problems``.

    A caller who may see the sample but not write spans (an admin) is refused with 403 at once: told that, not
    what the span lacks.
    """
    if pk is None:
        return None
    try:
        sample, _ = access.get_sample_for_user(user, pk, write=True)
    except Http404:
        problems["sample"] = ["no such sample"]
        return None
    return sample


def _left_out(request: Request, name: str) -> bool:
    """Whether the body has no ``name``, so the serializer gave it its default."""
    return not (isinstance(request.data, Mapping) and name in request.data)
