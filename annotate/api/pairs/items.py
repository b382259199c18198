"""The item and round lists. Reviewers see everyone's work; annotators work blind and see only their own answers."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, F, FilteredRelation, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.api.pairs.lookups import REVIEWER_ROLES, pairs_project_for
from annotate.api.pairs.serializers import (
    NO_PROJECT,
    NOT_A_PAIRS_PROJECT,
    PairItemQuerySerializer,
    PairItemRowSerializer,
    PairRoundRowSerializer,
)
from annotate.models import PairItem, PairJudgement, PairRound, Project


class PairItemListView(generics.GenericAPIView):
    serializer_class = PairItemRowSerializer

    def get_queryset(self) -> QuerySet[PairItem]:
        return PairItem.objects.none()  # the schema's; get() builds the real one for the caller's role

    @extend_schema(parameters=[PairItemQuerySerializer], responses={200: PairItemRowSerializer(many=True),
                                                                    404: NO_PROJECT})
    def get(self, request: Request) -> Response:
        """Items of the project. Admins, auditors and curators: all, with state, votes, consensus and round.
        Annotators: only the items they judged, with only their own label."""
        query = PairItemQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        options = query.validated_data
        project, role = pairs_project_for(request.user, options["project"])
        items = PairItem.objects.filter(project=project).select_related("round").order_by("id")
        if "round" in options:
            items = items.filter(round__number=options["round"])
        reviewer = role in REVIEWER_ROLES
        if reviewer:
            if "state" in options:
                items = items.filter(state=options["state"])
        else:
            items = items.annotate(
                mine=FilteredRelation(
                    "judgements",
                    condition=Q(judgements__judge=request.user, judgements__answered_at__isnull=False),
                ),
                your_label=F("mine__label"),
                your_answered_at=F("mine__answered_at"),
            ).filter(mine__isnull=False)
        page = self.paginate_queryset(items)
        rows = [self._row(item, reviewer) for item in (page if page is not None else items)]
        return self.get_paginated_response(rows) if page is not None else Response(rows)

    @staticmethod
    def _row(item: PairItem, reviewer: bool) -> dict[str, Any]:
        row: dict[str, Any] = {
            "id": item.pk,
            "external_id": item.external_id,
            "item_id": item.exported_id,
            "round": item.round.number if item.round else None,
            "original_words": item.original_words,
            "perturbed_words": item.perturbed_words,
        }
        if reviewer:
            row.update(
                state=item.state,
                consensus=item.label,
                votes={"H": item.votes_h, "N": item.votes_n, "unsure": item.votes_unsure},
                judges_needed=item.judges_needed,
                selection=item.selection,
            )
        else:
            row.update(
                your_label=item.your_label,  # type: ignore[attr-defined]
                answered_at=serializers.DateTimeField().to_representation(item.your_answered_at),  # type: ignore[attr-defined]
            )
        return row


def rounds_with_answers(project: Project, user: Any, *, whole_detector: bool = False) -> QuerySet[PairRound]:
    """The project's rounds, each with ``your_answers``: the user's counted answers in it.

    Counted in a subquery, not by joining the judgements and grouping the rounds: a GROUP BY over every column
    (the detector's head blob, the funnel) took seconds on SQLite with many judgements. The list shows only the
    detector's number, so its head is never read; ``whole_detector`` (one round's figures, which score with it)
    reads the detector whole in the same query.
    """
    answers = (
        PairJudgement.objects.filter(round=OuterRef("pk"), judge=user, counted=True, answered_at__isnull=False)
        .order_by().values("round").annotate(n=Count("id")).values("n")
    )
    found = PairRound.objects.filter(project=project).select_related("detector")
    if not whole_detector:
        found = found.only(*(field.name for field in PairRound._meta.concrete_fields), "detector__number")
    return found.annotate(your_answers=Coalesce(Subquery(answers), 0))


def items_by_state(project: Project, pair_round: PairRound | None = None) -> dict[int, dict[str, int]]:
    """Items per state of each round of the project (or of ``pair_round`` alone), by the round's id; one query."""
    items = PairItem.objects.filter(project=project, round__isnull=False)
    if pair_round is not None:
        items = items.filter(round=pair_round)
    by_state: dict[int, dict[str, int]] = {}
    for round_id, state, count in items.values_list("round_id", "state").annotate(n=Count("id")).order_by():
        by_state.setdefault(round_id, {})[state] = count
    return by_state


def round_row(pair_round: PairRound, reviewer: bool, by_state: dict[int, dict[str, int]]) -> dict[str, Any]:
    """A round as the round list shows it to the caller; the reviewers' fields only for reviewers."""
    timestamp = serializers.DateTimeField().to_representation
    row: dict[str, Any] = {
        "number": pair_round.number,
        "status": pair_round.status,
        "size": pair_round.size,
        "created_at": timestamp(pair_round.created_at),
        "closed_at": timestamp(pair_round.closed_at) if pair_round.closed_at else None,
        "your_answers": pair_round.your_answers,  # type: ignore[attr-defined]
    }
    if reviewer:
        row.update(
            items_by_state=by_state.get(pair_round.pk, {}),
            filters=pair_round.filters,
            funnel=pair_round.funnel,
            ratio=pair_round.ratio,
            promised_h_share=pair_round.promised_h_share,
            expected_h_share=(pair_round.ratio.get("selection") or {}).get("expected_h_share")
            if isinstance(pair_round.ratio, dict) else None,
            detector=pair_round.detector.number if pair_round.detector else None,
        )
    return row


class PairRoundListView(APIView):
    @extend_schema(responses={200: PairRoundRowSerializer(many=True), 400: NOT_A_PAIRS_PROJECT})
    def get(self, request: Request, slug: str) -> Response:
        """The project's rounds (members). Reviewers also get each round's items by state, filters, funnel and ratio.

        The detector's metrics, the balance reached and the agreement are on each round's own address
        (``pair-rounds/{number}/``): they cost queries per round, which the list does not spend."""
        project, role = pairs_project_for(request.user, slug)
        reviewer = role in REVIEWER_ROLES
        by_state = items_by_state(project) if reviewer else {}
        return Response([
            round_row(pair_round, reviewer, by_state) for pair_round in rounds_with_answers(project, request.user)
        ])
