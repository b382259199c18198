"""Thin DRF views: look objects up through access, write through services."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404, StreamingHttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotate import access
from annotate.api.serializers import (
    BatchSerializer,
    GoldRequestSerializer,
    GoldSerializer,
    ProjectSerializer,
    ReviewSerializer,
    SampleSerializer,
    SimilarityRequestSerializer,
    SpanSerializer,
    SpanUpdateSerializer,
    SpanWriteSerializer,
)
from annotate.models import GoldLabel, Membership, Project, Sample, SpanAnnotation
from annotate.services import embedding, export, rounds, spans


def _round(request: Request) -> int:
    raw = request.query_params.get("round", "1")
    if not raw.isdigit() or int(raw) < 1:
        raise ValidationError({"round": f"{raw!r} is not a round number (1, 2, ...)"})
    return int(raw)


class ExportQuerySerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=["jsonl", "csv"])
    round = serializers.IntegerField(default=1, min_value=1)
    pseudonyms = serializers.BooleanField(default=False)


class ProjectViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ProjectSerializer
    lookup_field = "slug"

    def get_queryset(self) -> QuerySet[Project]:
        return access.projects_for(self.request.user)

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        user = self.request.user
        roles = dict(Membership.objects.filter(user=user).values_list("project_id", "role"))
        if user.is_superuser:
            roles = dict.fromkeys(Project.objects.values_list("pk", flat=True), Membership.Role.ADMIN)
        context["roles"] = roles
        return context

    @action(detail=True)
    def batches(self, request: Request, slug: str | None = None) -> Response:
        project = self.get_object()
        batches = project.batches.all()
        if access.role_in(request.user, project) == Membership.Role.ANNOTATOR:
            batches = batches.filter(assignments__annotator=request.user).distinct()
        return Response(BatchSerializer(batches, many=True).data)

    @extend_schema(parameters=[ExportQuerySerializer], responses={(200, "application/jsonl"): str})
    @action(detail=True)
    def export(self, request: Request, slug: str | None = None) -> StreamingHttpResponse:
        """Stream the labeled dataset (admins and auditors): JSONL a sample a line, or CSV a span a row."""
        project, _ = access.get_project_for_exporter(request.user, slug or "")
        query = ExportQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        options = export.ExportOptions(**query.validated_data)
        lines = export.jsonl_lines(project, options) if options.format == "jsonl" else export.csv_lines(project, options)
        kind = "application/jsonl" if options.format == "jsonl" else "text/csv"
        response = StreamingHttpResponse(lines, content_type=f"{kind}; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{project.slug}-round{options.round}.{options.format}"'
        return response


class SampleViewSet(viewsets.ReadOnlyModelViewSet):
    """Samples the user may see. Filter with ?project=<slug>&batch=<id>."""

    serializer_class = SampleSerializer

    def get_queryset(self) -> QuerySet[Sample]:
        user = self.request.user
        slug = self.request.query_params.get("project")
        projects = access.projects_for(user)
        if slug:
            projects = projects.filter(slug=slug)
        samples = Sample.objects.none()
        for project in projects:
            samples = samples | access.samples_for(user, project)
        batch = self.request.query_params.get("batch")
        if batch:
            if not batch.isdigit():
                raise ValidationError({"batch": "must be a batch id"})
            samples = samples.filter(batch_id=int(batch))
        return samples.select_related("passage", "batch", "project").order_by("batch__position", "position", "id")

    def get_object(self) -> Sample:
        sample, _ = access.get_sample_for_user(self.request.user, int(self.kwargs["pk"]))
        return sample

    @extend_schema(responses=SpanSerializer(many=True))
    @action(detail=True, methods=["get"])
    def spans(self, request: Request, pk: str | None = None) -> Response:
        """Spans of a round the user may see (an annotator: only their own)."""
        sample = self.get_object()
        visible = access.visible_spans(request.user, sample, _round(request)).order_by("start", "end", "id")
        return Response(SpanSerializer(visible, many=True).data)

    @extend_schema(request=SimilarityRequestSerializer)
    @action(detail=True, methods=["post"])
    def similarity(self, request: Request, pk: str | None = None) -> Response:
        """Similarity of a selection with every sentence of the other text."""
        sample = self.get_object()
        body = SimilarityRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            result = embedding.similarity(sample, **body.validated_data)
        except ValueError as error:
            raise ValidationError({"start": str(error)}) from None
        except embedding.NotReady as error:
            return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
        return Response(result)

    @action(detail=True, methods=["get"])
    def others(self, request: Request, pk: str | None = None) -> Response:
        """In round 2: the other annotators' round-1 spans, names or pseudonyms, and where they disagree."""
        sample, _ = access.get_sample_for_user(request.user, int(pk or 0), write=True)
        if not sample.batch.assignments.filter(annotator=request.user, round=rounds.RECONCILIATION_ROUND).exists():
            raise PermissionDenied("The others' round-1 work is shown once round 2 is open for you")
        mine = SpanSerializer(
            SpanAnnotation.objects.filter(sample=sample, annotator=request.user, round=rounds.RECONCILIATION_ROUND),
            many=True,
        ).data
        return Response(rounds.others_round_one(sample, request.user, list(mine)))

    @extend_schema(request=GoldRequestSerializer, responses=GoldSerializer)
    @action(detail=True, methods=["get", "put"])
    def gold(self, request: Request, pk: str | None = None) -> Response:
        """The adjudicated gold label (curators and admins write it from the annotators' span ids)."""
        sample = self.get_object()
        if request.method == "PUT":
            access.get_project_for_curator(request.user, sample.project.slug)
            body = GoldRequestSerializer(data=request.data)
            body.is_valid(raise_exception=True)
            try:
                gold = rounds.adjudicate_sample(sample, request.user, **body.validated_data)
            except rounds.RoundError as error:
                raise ValidationError({"span_ids": str(error)}) from None
            return Response(GoldSerializer(gold).data)
        if access.role_in(request.user, sample.project) == Membership.Role.ANNOTATOR:
            raise PermissionDenied("Gold labels are for admins, curators and auditors")
        gold = GoldLabel.objects.filter(sample=sample).first()
        if gold is None:
            raise NotFound("This sample has no gold label yet")
        return Response(GoldSerializer(gold).data)

    @extend_schema(request=ReviewSerializer)
    @action(detail=True, methods=["post"])
    def review(self, request: Request, pk: str | None = None) -> Response:
        """Mark the sample done (no span = consistent) or not done."""
        sample, _ = access.get_sample_for_user(request.user, int(pk or 0), write=True)
        body = ReviewSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            review = spans.mark_sample_done(sample, request.user, **body.validated_data)
        except spans.SpanError as error:
            raise ValidationError({error.field: error.message}) from None
        return Response({"sample": sample.pk, "round": review.round, "done": review.done,
                         "seconds_spent": review.seconds_spent})


class SpanViewSet(
    mixins.CreateModelMixin, mixins.RetrieveModelMixin, mixins.UpdateModelMixin,
    mixins.DestroyModelMixin, mixins.ListModelMixin, viewsets.GenericViewSet,
):
    """Spans. Writes carry the version last read; a stale one gets 409 with the current span."""

    serializer_class = SpanSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[SpanAnnotation]:
        user = self.request.user
        mine = SpanAnnotation.objects.filter(annotator=user)
        if user.is_superuser:
            return SpanAnnotation.objects.select_related("annotator").order_by("id")
        admin_projects = Membership.objects.filter(
            user=user, role__in=[Membership.Role.ADMIN, Membership.Role.AUDITOR]
        ).values("project_id")
        return (mine | SpanAnnotation.objects.filter(sample__project_id__in=admin_projects)).select_related(
            "annotator"
        ).order_by("id")

    @extend_schema(request=SpanWriteSerializer, responses={201: SpanSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = SpanWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        try:
            sample, _ = access.get_sample_for_user(request.user, data.pop("sample"), write=True, round=data["round"])
        except Http404:
            raise ValidationError({"sample": "no such sample"}) from None
        try:
            span = spans.create_span(sample, request.user, **data)
        except spans.SpanError as error:
            raise ValidationError({error.field: error.message}) from None
        return Response(SpanSerializer(span).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=SpanUpdateSerializer, responses={200: SpanSerializer})
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        span = access.get_span_for_user(request.user, int(kwargs["pk"]))
        body = SpanUpdateSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        changes = dict(body.validated_data)
        if "version" not in changes:
            raise ValidationError({"version": "send the version you last read"})
        version = changes.pop("version")
        try:
            span = spans.update_span(span, version=version, changes=changes)
        except spans.SpanError as error:
            raise ValidationError({error.field: error.message}) from None
        except spans.StaleVersion as stale:
            return self._conflict(stale)
        return Response(SpanSerializer(span).data)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.partial_update(request, *args, **kwargs)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        span = access.get_span_for_user(request.user, int(kwargs["pk"]))
        raw = request.query_params.get("version", request.data.get("version") if hasattr(request.data, "get") else None)
        try:
            version = int(raw)
        except (TypeError, ValueError):
            raise ValidationError({"version": "send the version you last read"}) from None
        try:
            spans.delete_span(span, version=version)
        except spans.StaleVersion as stale:
            return self._conflict(stale)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @staticmethod
    def _conflict(stale: spans.StaleVersion) -> Response:
        current = SpanSerializer(stale.current).data if stale.current else None
        return Response({"detail": str(stale), "current": current}, status=status.HTTP_409_CONFLICT)
