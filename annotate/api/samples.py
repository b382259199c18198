"""Samples through the API: the list and one sample, with what is done on a sample (its spans of a round,
similarity, the others' round-1 work, the gold label, marking it done, flags). Thin views: objects are looked up
through access, writes go through services."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from annotate import access
from annotate.api.errors import field_error, frozen_round
from annotate.api.projects import roles_of
from annotate.api.schema import ROUND_FROZEN, ROUND_QUERY, SAMPLE_ID, SPAN_FIELD_ERRORS
from annotate.api.serializers import (
    MAX_ID,
    MAX_ROUND,
    ErrorSerializer,
    FlagRequestSerializer,
    FlagSerializer,
    FlagWithdrawSerializer,
    GoldConflictSerializer,
    GoldRequestSerializer,
    GoldSerializer,
    OthersSerializer,
    ReviewResultSerializer,
    ReviewSerializer,
    SampleSerializer,
    SimilarityLoadingSerializer,
    SimilarityRequestSerializer,
    SimilaritySerializer,
    SpanSerializer,
    TimeRefusedSerializer,
    TimeSpentSerializer,
)
from annotate.models import GoldLabel, Membership, Project, Sample, SpanAnnotation
from annotate.services import embedding, flags, freeze, rounds, spans

NOT_FLAGGER = OpenApiResponse(ErrorSerializer, description="Only the batch's annotators of that round flag it.")
NO_PROJECT_OR_BATCH = OpenApiResponse(
    ErrorSerializer,
    description="`project` or `batch` names none among yours: one that does not exist and one you may not see "
    'get the same answer, `{"detail": "No such project"}` or `{"detail": "No such batch"}`.',
)
NO_PROJECT_OR_SAMPLE = OpenApiResponse(
    ErrorSerializer,
    description="`project` or `sample` names none among yours: one that does not exist and one you may not see "
    'get the same answer, `{"detail": "No such project"}` or `{"detail": "No such sample"}`.',
)


def span_project_of_member(user: Any, slug: str) -> Project:
    """The span project ``slug`` names, for a filter of the sample or span list: 404 for a member of none.

    The same 404 (``{"detail": "No such project"}``) for a slug that names nothing and for a project the user has
    no role in, so its existence stays hidden, as ``/api/pairs/?project=`` answers. A member naming a pairs
    project is told its kind (400 on ``project``), as the pairs endpoints tell a member of a span project.
    """
    project, _ = access.get_project_for_user(user, slug)
    if project.kind == Project.Kind.PAIRS:
        raise field_error(
            "project",
            f"{project.slug!r} is a pairs project: it has items to judge, not samples and spans; its items are at "
            f"/api/pairs/?project={project.slug}",
        )
    return project


def _with_staleness(gold: GoldLabel, sample: Sample) -> GoldLabel:
    """The sample's gold label with ``stale_reason`` set, as GoldSerializer reads it: what changed since it was
    decided (the curation page's "stale"), or None."""
    gold.stale_reason = freeze.stale_gold_samples(sample.project, sample_id=sample.pk).get(sample.pk)
    return gold


def _round_value(raw: Any) -> int:
    """A round number from a query or body value; 1 when absent, and an empty one (``?round=``) is refused."""
    if raw is None:
        return 1
    if raw == "":
        raise field_error("round", "round is empty: send a round number (1, 2, ...), or leave round out for its "
                                   "default (1)")
    text = str(raw)
    # ASCII digits only: "²" passes isdigit() but int() refuses it (a 500).
    if isinstance(raw, bool) or not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_ROUND:
        raise field_error("round", f"{raw!r} is not a round number (1, 2, ...)")
    return int(text)


def _round(request: Request) -> int:
    return _round_value(request.query_params.get("round"))


def _sample_filters(request: Request) -> tuple[str | None, int | None]:
    """``?project=`` and ``?batch=`` of the sample list (None: not sent), both checked so one 400 names each bad one.

    An empty one is refused, not read as "every project": a filter left empty by mistake would list other
    samples than meant.
    """
    slug, batch = request.query_params.get("project"), request.query_params.get("batch")
    problems: dict[str, list[str]] = {}
    if slug == "":
        problems["project"] = ["project is empty: send a project's slug, or leave project out for every project "
                               "you may see"]
    if batch == "":
        problems["batch"] = ["batch is empty: send a batch's id, or leave batch out for every batch"]
    elif batch is not None and (not (batch.isascii() and batch.isdigit()) or int(batch) > MAX_ID):
        problems["batch"] = [f"{batch!r} is not a batch id"]
    if problems:
        raise serializers.ValidationError(problems)  # already the API's shape, field -> [messages]
    return slug, None if batch is None else int(batch)


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter(
                "project", {"type": "string", "minLength": 1},
                description="Only this project's samples (its slug); an empty one gets 400, a project you are not "
                "a member of 404 like one that does not exist, and a pairs project 400 (it has items, not samples).",
            ),
            OpenApiParameter(
                "batch", {"type": "integer", "minimum": 0, "maximum": MAX_ID},
                description="Only this batch's samples: the batch's id, a sample's `batch_id` (its `batch` field is "
                "the batch's name). A batch you may not see gets 404 like one that does not exist; with `project`, "
                "both filters apply.",
            ),
        ],
        responses={200: SampleSerializer(many=True), 404: NO_PROJECT_OR_BATCH},
    ),
    retrieve=extend_schema(parameters=[SAMPLE_ID]),
)
class SampleViewSet(viewsets.ReadOnlyModelViewSet):
    """Samples the user may see. Filter with ?project=<slug>&batch=<id>."""

    serializer_class = SampleSerializer
    lookup_value_regex = "[0-9]{1,18}"

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        context["roles"] = roles_of(self.request.user)
        return context

    def get_queryset(self) -> QuerySet[Sample]:
        """The samples the user may see, narrowed by the filters; a project or batch they may not see is a 404,
        as ``/api/pairs/?project=`` answers (a filter naming nothing is a mistake, not an empty project)."""
        user = self.request.user
        slug, batch = _sample_filters(self.request)
        if slug is not None:
            projects: Iterable[Project] = [span_project_of_member(user, slug)]
        else:
            projects = access.projects_for(user)
        if batch is not None:
            access.get_batch_for_user(user, batch)  # 404 "No such batch" unless the user may see it
        samples = Sample.objects.none()
        for project in projects:
            samples = samples | access.samples_for(user, project)
        if batch is not None:
            samples = samples.filter(batch_id=batch)
        return samples.select_related("passage", "batch", "project").order_by("batch__position", "position", "id")

    def get_object(self) -> Sample:
        sample, _ = access.get_sample_for_user(self.request.user, int(self.kwargs["pk"]))
        return sample

    @extend_schema(parameters=[SAMPLE_ID, ROUND_QUERY], responses={200: SpanSerializer(many=True), 400: SPAN_FIELD_ERRORS})
    @action(detail=True, methods=["get"], pagination_class=None)
    def spans(self, request: Request, pk: str | None = None) -> Response:
        """Spans of a round the user may see (an annotator: only their own)."""
        sample = self.get_object()
        visible = access.visible_spans(request.user, sample, _round(request)).order_by("start", "end", "id")
        return Response(SpanSerializer(visible, many=True).data)

    @extend_schema(
        parameters=[SAMPLE_ID],
        request=SimilarityRequestSerializer,
        responses={
            200: SimilaritySerializer,
            409: OpenApiResponse(ErrorSerializer, description="The text to score has no sentence vectors of the "
                                 "configured embedding model yet (not embedded, or embedded with another model): "
                                 "detail says which and which job computes them; one is queued when none is."),
            503: OpenApiResponse(SimilarityLoadingSerializer, description="The embedding model is still loading."),
        },
    )
    @action(detail=True, methods=["post"])
    def similarity(self, request: Request, pk: str | None = None) -> Response:
        """Similarity of a selection with every sentence of the other text."""
        sample = self.get_object()
        body = SimilarityRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            result = embedding.similarity(sample, **body.validated_data)
        except ValueError as error:
            raise field_error("start", str(error)) from None
        except embedding.NotReady as error:
            return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
        except embedding.Loading:
            return Response(
                {"detail": "loading similarity model", "loading": True},
                status=status.HTTP_503_SERVICE_UNAVAILABLE,
                headers={"Retry-After": "1"},
            )
        return Response(result)

    @extend_schema(
        parameters=[SAMPLE_ID],
        responses={200: OthersSerializer, 403: OpenApiResponse(ErrorSerializer, description="Round 2 is not open for you.")},
    )
    @action(detail=True, methods=["get"])
    def others(self, request: Request, pk: str | None = None) -> Response:
        """In round 2: the other annotators' round-1 spans, names or pseudonyms, and where they disagree."""
        sample, _ = access.get_sample_for_user(request.user, int(pk or 0), write=True)
        if not sample.batch.assignments.filter(annotator=request.user, round=rounds.RECONCILIATION_ROUND).exists():
            raise PermissionDenied("The others' round-1 work is shown once round 2 is open for you")
        mine = SpanSerializer(
            access.with_assigned(SpanAnnotation.objects.filter(sample=sample, annotator=request.user,
                                                               round=rounds.RECONCILIATION_ROUND)),
            many=True,
        ).data
        return Response(rounds.others_round_one(sample, request.user, list(mine)))

    @extend_schema(
        parameters=[SAMPLE_ID],
        request=GoldRequestSerializer,
        responses={
            200: GoldSerializer,
            403: OpenApiResponse(ErrorSerializer, description="Annotators do not see gold labels; only curators and "
                                 "admins write them."),
            404: OpenApiResponse(ErrorSerializer, description="No such sample, or (GET) it has no gold label yet."),
            409: OpenApiResponse(GoldConflictSerializer, description="(PUT) The gold label changed since the one "
                                 "named by base_decided_at: another curator saved it. Nothing was saved."),
        },
    )
    @action(detail=True, methods=["get", "put"])
    def gold(self, request: Request, pk: str | None = None) -> Response:
        """The adjudicated gold label (curators and admins write it from the annotators' span ids).

        A PUT with ``base_decided_at`` (the gold label it saw, null for none) is refused with 409 when another
        curator saved a gold label since."""
        sample = self.get_object()
        if request.method == "PUT":
            access.get_project_for_curator(request.user, sample.project.slug)
            body = GoldRequestSerializer(data=request.data)
            body.is_valid(raise_exception=True)
            written = dict(body.validated_data)
            if "base_decided_at" in written:
                written["seen"] = written.pop("base_decided_at") or rounds.NO_GOLD
            try:
                gold = rounds.adjudicate_sample(sample, request.user, **written)
            except rounds.GoldConflict as conflict:
                current = GoldSerializer(_with_staleness(conflict.current, sample)).data if conflict.current else None
                return Response({"detail": conflict.api_message, "current": current}, status=status.HTTP_409_CONFLICT)
            except rounds.RoundError as error:
                raise field_error("span_ids", str(error)) from None
            return Response(GoldSerializer(_with_staleness(gold, sample)).data)
        if access.role_in(request.user, sample.project) == Membership.Role.ANNOTATOR:
            raise PermissionDenied("Gold labels are for admins, curators and auditors")
        gold = GoldLabel.objects.filter(sample=sample).first()
        if gold is None:
            raise NotFound("This sample has no gold label yet")
        return Response(GoldSerializer(_with_staleness(gold, sample)).data)

    @extend_schema(
        parameters=[SAMPLE_ID], request=ReviewSerializer, responses={200: ReviewResultSerializer, 409: ROUND_FROZEN}
    )
    @action(detail=True, methods=["post"])
    def review(self, request: Request, pk: str | None = None) -> Response:
        """Mark the sample done (no span = consistent) or not done."""
        sample, _ = access.get_sample_for_user(request.user, int(pk or 0), write=True)
        body = ReviewSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            review = spans.mark_sample_done(sample, request.user, **body.validated_data)
        except spans.SpanError as error:
            raise field_error(error.field, error.message) from None
        except freeze.NotAssigned:  # unassigned or removed while the request was on its way: as a retry is answered
            raise NotFound("No such sample") from None
        except freeze.RoundFrozen as frozen:
            left_out = not (isinstance(request.data, Mapping) and "round" in request.data)
            return frozen_round(frozen, round_sent=body.validated_data["round"], round_left_out=left_out)
        return Response({"sample": sample.pk, "round": review.round, "done": review.done,
                         "seconds_spent": review.seconds_spent})

    @extend_schema(
        parameters=[SAMPLE_ID],
        request=TimeSpentSerializer,
        responses={
            200: ReviewResultSerializer,
            409: OpenApiResponse(TimeRefusedSerializer, description="Nothing was stored: the round is frozen, and a "
                                 "frozen round's times are final."),
        },
    )
    @action(detail=True, methods=["post"])
    def time(self, request: Request, pk: str | None = None) -> Response:
        """Add the seconds of one visit to the time spent on the sample, without marking it done or not done.

        The annotation page sends it when the annotator leaves the sample by any way but D (which sends its time with
        the review): the sample keys and links, a reload, closing the tab."""
        sample, _ = access.get_sample_for_user(request.user, int(pk or 0), write=True)
        body = TimeSpentSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            review = spans.add_time_spent(sample, request.user, **body.validated_data)
        except spans.SpanError as error:
            raise field_error(error.field, error.message) from None
        except freeze.NotAssigned:
            raise NotFound("No such sample") from None
        except freeze.RoundFrozen as frozen:
            return frozen_round(frozen)  # no resend_with: the time belongs to the round that was visited
        return Response({"sample": sample.pk, "round": review.round, "done": review.done,
                         "seconds_spent": review.seconds_spent})

    # Each method its own successes: POST raises or changes the flag, GET shows it, DELETE withdraws it.
    @extend_schema(
        methods=["POST"],
        parameters=[SAMPLE_ID],
        request=FlagRequestSerializer,
        responses={200: FlagSerializer, 201: FlagSerializer, 403: NOT_FLAGGER},
    )
    @extend_schema(methods=["GET"], parameters=[SAMPLE_ID, ROUND_QUERY], responses={200: FlagSerializer, 403: NOT_FLAGGER})
    @extend_schema(methods=["DELETE"], parameters=[SAMPLE_ID, ROUND_QUERY], responses={204: None, 403: NOT_FLAGGER})
    @action(detail=True, methods=["get", "post", "delete"])
    def flag(self, request: Request, pk: str | None = None) -> Response:
        """The caller's flag on the sample (an annotator of its batch in that round): broken or skip, with a comment.

        POST raises it (201) or changes it (200); DELETE withdraws it (204; round in
        the query or body, default 1; any other body field gets 400 naming it); GET
        shows it (404 when there is none). Who may flag is asked before the body is read: a member who annotates
        the batch in no round gets 403 whatever they send, an outsider 404.
        """
        sample, _ = access.get_sample_for_user(request.user, int(pk or 0))
        try:
            flags.check_batch_flagger(sample, request.user)
            if request.method == "POST":
                body = FlagRequestSerializer(data=request.data)
                body.is_valid(raise_exception=True)
                flag, created = flags.flag_sample(sample, request.user, **body.validated_data)
                return Response(FlagSerializer(flag).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)
            if request.method == "DELETE":  # an empty body is fine; a key other than round is refused by name
                FlagWithdrawSerializer(data=request.data).is_valid(raise_exception=True)
            raw = request.query_params.get("round")
            if raw is None and hasattr(request.data, "get"):
                raw = request.data.get("round")
            round = _round_value(raw)
            if request.method == "DELETE":
                flags.withdraw_flag(sample, request.user, round=round)
                return Response(status=status.HTTP_204_NO_CONTENT)
            flag = flags.own_flag(sample, request.user, round=round)
            if flag is None:
                raise NotFound(f"you have not flagged this sample in round {round}")
            return Response(FlagSerializer(flag).data)
        except flags.NotFlagger as error:
            raise PermissionDenied(error.message) from None
        except flags.NoFlag as error:
            raise NotFound(error.message) from None
        except flags.FlagError as error:
            raise field_error(error.field, error.message) from None
