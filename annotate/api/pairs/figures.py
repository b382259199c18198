"""A pairs project's figures: agreement per round and overall, and one round with its detector metrics and balance.

The numbers come from the services the pages and the commands call, computed for each request:
``annotate.services.pairs.agreement.pair_agreement`` (the project page, the round page and ``pair_agreement
--json``) and ``annotate.services.pairs.rounds.round_report`` (the round page). An undefined value is null with
the service's reason beside it, never 0 or NaN. Who sees them is the pages' rule: the project's admins, auditors
and curators (annotators work blind). A slug of a span project answers its members 400 on ``project``, naming
its kind (``lookups.pairs_project_for``).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.api.errors import field_error
from annotate.api.pairs.items import items_by_state, round_row, rounds_with_answers
from annotate.api.pairs.lookups import REVIEWER_ROLES, pairs_project_for
from annotate.api.pairs.serializers import (
    NOT_A_PAIRS_PROJECT,
    PairAgreementQuerySerializer,
    PairAgreementReportSerializer,
    PairRoundDetailSerializer,
)
from annotate.api.schema import FIELD_ERRORS_SCHEMA, integer
from annotate.api.serializers import MAX_ROUND, ErrorSerializer
from annotate.models import PairRound, Project
from annotate.services.pairs import agreement, rounds

FOR_REVIEWERS = OpenApiResponse(
    ErrorSerializer,
    description="Annotators work blind: agreement is for the project's admins, auditors and curators, as on its pages.",
)
NOT_A_PAIRS_PROJECT_OR_BAD_QUERY = OpenApiResponse(
    FIELD_ERRORS_SCHEMA,
    description="A bad or empty query parameter (`round`, also a round the project does not have), or a span "
    "project (`project` names its kind); an object keyed by the parameter at fault, each with a list of messages.",
)
ROUND_NUMBER = OpenApiParameter(
    "number", integer(1, MAX_ROUND), OpenApiParameter.PATH, description="The round's number (1, 2, ...)."
)


def _round_of(project: Project, user: Any, number: str, *, reviewer: bool) -> PairRound:
    """The round with the caller's answer count; 404 naming the rounds there are when the project has no such one."""
    value = int(number)
    # A reviewer's round carries its whole detector: the report reads its encoder and head.
    found = rounds_with_answers(project, user, whole_detector=reviewer).filter(number=value).first() if (
        1 <= value <= MAX_ROUND) else None
    if found is None:
        numbers = PairRound.objects.filter(project=project).order_by("number").values_list("number", flat=True)
        raise NotFound(
            f"{project.slug!r} has no round {number} (rounds: {', '.join(map(str, numbers)) or 'none yet'})"
        )
    return found


def expected_balance(selection: dict[str, Any] | None) -> dict[str, Any]:
    """The balance's additive fields: the H share expected of the drawn items themselves, and its explanation."""
    selection = selection or {}
    return {"expected_h_share": selection.get("expected_h_share"),
            "expected_explanation": selection.get("explanation")}


def round_figures(project: Project, pair_round: PairRound) -> dict[str, Any]:
    """The round page's figures, from the services the page calls: agreement, detector metrics and balance."""
    report = rounds.round_report(pair_round)
    return {
        "agreement": agreement.current_pair_agreement(project, pair_round.number),
        "detector_metrics": {
            "detector": report["detector"],
            "metrics": report["metrics"],
            "undefined": report["metrics_undefined"],
            "reason": report["metrics_reason"],
        },
        "balance": {**report["balance"], **expected_balance(report["selection_balance"]),
                    "undefined": report["balance_undefined"]},
    }


class PairAgreementView(APIView):
    @extend_schema(
        parameters=[PairAgreementQuerySerializer],
        responses={200: PairAgreementReportSerializer, 400: NOT_A_PAIRS_PROJECT_OR_BAD_QUERY, 403: FOR_REVIEWERS},
    )
    def get(self, request: Request, slug: str) -> Response:
        """Agreement over the items whose judging is finished: consensus, >= 80%, unanimous, no consensus, alpha.

        Every round together with each round listed, or one round with ?round=; the ``pair_agreement --json``
        object, the figures of the project page and the round page (admins, auditors and curators)."""
        project, role = pairs_project_for(request.user, slug)
        if role not in REVIEWER_ROLES:
            raise PermissionDenied(FOR_REVIEWERS.description)
        query = PairAgreementQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        try:
            report = agreement.current_pair_agreement(project, query.validated_data.get("round"))
        except agreement.UnknownRound as error:
            raise field_error("round", str(error)) from None
        return Response(report)


class PairRoundDetailView(APIView):
    @extend_schema(parameters=[ROUND_NUMBER], responses={200: PairRoundDetailSerializer, 400: NOT_A_PAIRS_PROJECT})
    def get(self, request: Request, slug: str, number: str) -> Response:
        """One round (members): the round list's entry. Reviewers also get the round page's figures: its agreement,
        the selecting detector's metrics on its consensus items and the H/N balance reached beside the one promised."""
        project, role = pairs_project_for(request.user, slug)
        reviewer = role in REVIEWER_ROLES
        pair_round = _round_of(project, request.user, number, reviewer=reviewer)
        if not reviewer:
            return Response(round_row(pair_round, False, {}))
        row = round_row(pair_round, True, items_by_state(project, pair_round))
        return Response({**row, **round_figures(project, pair_round)})
