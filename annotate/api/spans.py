"""Spans through the API: list, read, create, change and delete them, each write carrying the version last
read (a stale one gets 409 with the current span). Thin views: spans are looked up through access, written
through annotate.services.spans."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from annotate import access
from annotate.api.errors import field_error, frozen_round
from annotate.api.schema import SPAN_CONFLICT, SPAN_EXISTS_OR_FROZEN, SPAN_FIELD_ERRORS, SPAN_ID, VERSION_QUERY
from annotate.api.serializers import MAX_VERSION, SpanSerializer, SpanUpdateSerializer, SpanWriteSerializer
from annotate.models import Membership, SpanAnnotation
from annotate.services import freeze, spans


@extend_schema_view(
    retrieve=extend_schema(parameters=[SPAN_ID]),
    destroy=extend_schema(
        parameters=[SPAN_ID, VERSION_QUERY], responses={204: None, 400: SPAN_FIELD_ERRORS, 409: SPAN_CONFLICT}
    ),
)
class SpanViewSet(
    mixins.CreateModelMixin, mixins.RetrieveModelMixin, mixins.UpdateModelMixin,
    mixins.DestroyModelMixin, mixins.ListModelMixin, viewsets.GenericViewSet,
):
    """Spans. Writes carry the version last read; a stale one gets 409 with the current span."""

    serializer_class = SpanSerializer
    lookup_value_regex = "[0-9]{1,18}"
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[SpanAnnotation]:
        user = self.request.user
        mine = SpanAnnotation.objects.filter(annotator=user)
        if user.is_superuser:
            return SpanAnnotation.objects.select_related("annotator").order_by("id")
        # Curators too: they adjudicate from these spans and read them all on /api/samples/<id>/spans/.
        admin_projects = Membership.objects.filter(
            user=user, role__in=[Membership.Role.ADMIN, Membership.Role.AUDITOR, Membership.Role.CURATOR]
        ).values("project_id")
        return (mine | SpanAnnotation.objects.filter(sample__project_id__in=admin_projects)).select_related(
            "annotator"
        ).order_by("id")

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
        body = SpanWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        try:
            sample, _ = access.get_sample_for_user(request.user, data.pop("sample"), write=True)
        except Http404:
            raise field_error("sample", "no such sample") from None
        try:
            span = spans.create_span(sample, request.user, **data)
        except spans.SpanError as error:
            raise field_error(error.field, error.message) from None
        except freeze.RoundFrozen as frozen:
            return frozen_round(frozen)
        except spans.SpanExists as exists:
            return Response(
                {"detail": str(exists), "existing": exists.existing.pk, "current": SpanSerializer(exists.existing).data},
                status=status.HTTP_409_CONFLICT,
            )
        # The same span saved twice is stored once: the repeat answers 200 with the stored span.
        code = status.HTTP_200_OK if getattr(span, "duplicate", False) else status.HTTP_201_CREATED
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
        body.is_valid(raise_exception=True)
        changes = dict(body.validated_data)
        version = changes.pop("version")  # required even in a PATCH (SpanUpdateSerializer.required_when_partial)
        try:
            span = spans.update_span(span, version=version, changes=changes)
        except spans.SpanError as error:
            raise field_error(error.field, error.message) from None
        except spans.StaleVersion as stale:
            return self._conflict(stale)
        except freeze.RoundFrozen as frozen:
            return frozen_round(frozen)
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
        return Response(status=status.HTTP_204_NO_CONTENT)

    @staticmethod
    def _conflict(stale: spans.StaleVersion) -> Response:
        current = SpanSerializer(stale.current).data if stale.current else None
        return Response({"detail": str(stale), "current": current}, status=status.HTTP_409_CONFLICT)
