"""The pairs REST API: the next item, answers (with the following item), undo, items, rounds and spammer flags.

Same rules as the pages, because both go through the same services
(``annotate.services.pairs.queue`` and ``.flags``): outsiders get 404, a role
that may not do this 403, anonymous callers 401. Annotators work blind: the
item list shows them only the items they judged, with only their own label,
never the others' votes or the consensus.

The answer endpoint returns the judge's next item in the same response
(``next``), so the labeling page shows it without a second round trip.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, F, FilteredRelation, Q, QuerySet
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate import access
from annotate.api.schema import id_in_path, integer
from annotate.api.serializers import MAX_ID, MAX_ROUND, ErrorSerializer
from annotate.models import JudgeFlag, Membership, PairItem, PairJudgement, PairRound, Project
from annotate.pairmath import spam
from annotate.services.pairs import flags, queue

Role = Membership.Role
# Roles that see everyone's work on items, rounds and agreement; annotators see their own answers only.
REVIEWER_ROLES = (Role.ADMIN, Role.AUDITOR, Role.CURATOR)
LABEL_HELP = "H hallucination, N not hallucination, ? cannot determine."


# --------------------------------------------------------------------------- lookups


def get_pairs_project(user: Any, slug: str) -> Project:
    """The pairs project with its settings, one query; 404 when there is none (the caller's role is checked later)."""
    project = Project.objects.select_related("pair_config").filter(slug=slug, kind=Project.Kind.PAIRS).first()
    if project is None:
        raise NotFound("No such pairs project")
    return project


def get_pairs_project_for_user(user: Any, slug: str, *, roles: tuple[str, ...] | None = None
                               ) -> tuple[Project, str]:
    """The pairs project and the user's role; 404 for outsiders, 403 for a role not in ``roles``."""
    project = get_pairs_project(user, slug)
    role = access.role_in(user, project)
    if role is None:
        raise NotFound("No such pairs project")
    if roles is not None and role not in roles:
        raise PermissionDenied(f"Your role in this project ({role}) may not do this")
    return project, role


def _queue_refusal(error: queue.PairQueueError) -> Response:
    if error.status == 400:
        raise ValidationError({getattr(error, "field", "non_field_errors"): [error.message]})
    if error.status == 404:
        raise NotFound(error.message)
    if error.status == 403:
        raise PermissionDenied(error.message)
    return Response({"detail": error.message, "code": error.code}, status=error.status)


# --------------------------------------------------------------------------- serializers (also the schema)


class PairProjectQuerySerializer(serializers.Serializer):
    project = serializers.CharField(max_length=100, help_text="The pairs project's slug.")


class PairProgressSerializer(serializers.Serializer):
    answered = serializers.IntegerField(help_text="Your counted answers in the project.")
    left = serializers.IntegerField(help_text="Open items still waiting for a judge like you (not served to you).")


def span_field(**options: Any) -> serializers.ListField:
    """[start, end) in code points."""
    return serializers.ListField(child=serializers.IntegerField(min_value=0), min_length=2, max_length=2, **options)


class PairToJudgeSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="The item's id: answer at /api/pairs/{id}/judgements/.")
    original = serializers.CharField(allow_null=True, help_text="The original text (null for HaDes release rows).")
    perturbed = serializers.CharField(help_text="The perturbed text.")
    original_span = span_field(
        allow_null=True, help_text="[start, end) of the replaced words in the original (code points)."
    )
    perturbed_span = span_field(help_text="[start, end) of the item's span in the perturbed text.")
    other_spans = serializers.ListField(
        child=span_field(),
        help_text="The other replaced spans of the same perturbed text, [start, end) each, in text order.",
    )
    original_words = serializers.CharField(allow_blank=True)
    perturbed_words = serializers.CharField(allow_blank=True)
    served_at = serializers.DateTimeField(help_text="When the server served it to you; time per item counts from here.")
    progress = PairProgressSerializer()


class PairJudgementRequestSerializer(serializers.Serializer):
    label = serializers.ChoiceField(
        choices=list(queue.LABELS),
        help_text=LABEL_HELP,
        error_messages={"invalid_choice": '"{input}" is not a label; answer one of H, N, ? (' + LABEL_HELP + ")"},
    )


class PairJudgementResultSerializer(serializers.Serializer):
    item = serializers.IntegerField(help_text="The item you judged.")
    label = serializers.ChoiceField(choices=list(queue.LABELS))
    seconds = serializers.FloatField(help_text="Server-measured: from serving the item to receiving the answer.")
    answered_at = serializers.DateTimeField()
    next = PairToJudgeSerializer(
        allow_null=True, help_text="Your next item, served already (null when nothing is left for you)."
    )
    progress = PairProgressSerializer()


class PairConflictSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="What happened, for a person to read; nothing was changed.")
    code = serializers.ChoiceField(
        choices=["already_judged", "not_served", "serve_expired", "nothing_to_undo"],
        help_text="already_judged: you judged this item before; not_served: it was not served to you; "
        "serve_expired: your serve expired and its slot went to another judge; nothing_to_undo: no answer to undo.",
    )


class VotesSerializer(serializers.Serializer):
    H = serializers.IntegerField()
    N = serializers.IntegerField()
    unsure = serializers.IntegerField(help_text='"?" answers: judges who could not determine.')


# A row of the item list. Reviewers get the state and votes; annotators only their own answer.
class PairItemRowSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    external_id = serializers.CharField(allow_blank=True)
    round = serializers.IntegerField(allow_null=True, help_text="The round's number; null in the pool.")
    original_words = serializers.CharField(allow_blank=True)
    perturbed_words = serializers.CharField(allow_blank=True)
    state = serializers.ChoiceField(choices=PairItem.State.values, required=False, help_text="Reviewers only.")
    consensus = serializers.CharField(
        allow_blank=True, required=False, help_text="Reviewers only: H or N with consensus (or labelled), else ''."
    )
    votes = VotesSerializer(required=False, help_text="Reviewers only: counted answers.")
    judges_needed = serializers.IntegerField(required=False, help_text="Reviewers only.")
    selection = serializers.JSONField(required=False, help_text="Reviewers only: why the round drew the item.")
    your_label = serializers.CharField(required=False, help_text="Annotators only: your answer, H, N or ?.")
    answered_at = serializers.DateTimeField(required=False, help_text="Annotators only: when you answered.")


class PairItemQuerySerializer(PairProjectQuerySerializer):
    state = serializers.ChoiceField(choices=PairItem.State.values, required=False, help_text="Reviewers only.")
    round = serializers.IntegerField(min_value=1, max_value=MAX_ROUND, required=False)


class PairRoundRowSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    status = serializers.ChoiceField(choices=PairRound.Status.values)
    size = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    closed_at = serializers.DateTimeField(allow_null=True)
    your_answers = serializers.IntegerField(help_text="Your counted answers in this round.")
    items_by_state = serializers.DictField(
        child=serializers.IntegerField(), required=False, help_text="Reviewers only: the round's items per state."
    )
    filters = serializers.JSONField(required=False, help_text="Reviewers only.")
    funnel = serializers.JSONField(required=False, help_text="Reviewers only.")
    ratio = serializers.JSONField(required=False, help_text="Reviewers only: the subsampling ratio's figures.")
    promised_h_share = serializers.FloatField(allow_null=True, required=False, help_text="Reviewers only.")
    detector = serializers.IntegerField(allow_null=True, required=False, help_text="Reviewers only.")


class JudgeFlagSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    judge = serializers.CharField(help_text="The judge's username.")
    rule = serializers.ChoiceField(choices=JudgeFlag.Rule.values)
    rule_name = serializers.CharField()
    figures = serializers.DictField(help_text="What the rule measured, e.g. {judgements, mean_seconds, limit_seconds}.")
    explanation = serializers.CharField(help_text="The rule and its figures in words.")
    status = serializers.ChoiceField(choices=JudgeFlag.Status.values)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    reviewed_by = serializers.CharField(allow_null=True)
    reviewed_at = serializers.DateTimeField(allow_null=True)
    judge_blocked = serializers.BooleanField()


class FlagQuerySerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=JudgeFlag.Status.values, required=False)


class BlockRequestSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=flags.MAX_REASON, required=False, allow_blank=True)


class BlockResultSerializer(serializers.Serializer):
    flag = JudgeFlagSerializer()
    items_recomputed = serializers.IntegerField(help_text="Items the judge had judged, decided again without them.")
    items_reopened = serializers.IntegerField(help_text="Of those, items that went back to the queue.")


# --------------------------------------------------------------------------- payloads


def _span(start: int | None, end: int | None) -> list[int] | None:
    return None if start is None or end is None else [start, end]


def item_to_judge(judgement: PairJudgement, progress: dict[str, int]) -> dict[str, Any]:
    item = judgement.item
    original = item.perturbed.original
    return {
        "id": item.pk,
        "original": original.text if original is not None else None,
        "perturbed": item.perturbed.text,
        "original_span": _span(item.original_start, item.original_end),
        "perturbed_span": [item.perturbed_start, item.perturbed_end],
        "other_spans": queue.other_spans(item),
        "original_words": item.original_words,
        "perturbed_words": item.perturbed_words,
        "served_at": serializers.DateTimeField().to_representation(judgement.served_at),
        "progress": progress,
    }


def flag_payload(flag: JudgeFlag, blocked_judges: set[int]) -> dict[str, Any]:
    timestamp = serializers.DateTimeField().to_representation
    return {
        "id": flag.pk,
        "judge": flag.judge.get_username(),
        "rule": flag.rule,
        "rule_name": flag.get_rule_display(),
        "figures": flag.figures,
        "explanation": spam.explain(flag.rule, flag.figures),
        "status": flag.status,
        "created_at": timestamp(flag.created_at),
        "updated_at": timestamp(flag.updated_at),
        "reviewed_by": flag.reviewed_by.get_username() if flag.reviewed_by else None,
        "reviewed_at": timestamp(flag.reviewed_at) if flag.reviewed_at else None,
        "judge_blocked": flag.judge_id in blocked_judges,
    }


# --------------------------------------------------------------------------- the judge's endpoints


PROJECT_QUERY = [PairProjectQuerySerializer]
NO_PROJECT = OpenApiResponse(ErrorSerializer, description="No such pairs project among yours.")
REFUSED = OpenApiResponse(
    ErrorSerializer, description="Your role does not judge pairs (annotators and admins do), or you are blocked."
)


def _project_query(request: Request) -> str:
    query = PairProjectQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data["project"]


class NextPairView(APIView):
    @extend_schema(
        parameters=PROJECT_QUERY,
        responses={
            200: PairToJudgeSerializer,
            204: OpenApiResponse(description="Nothing is left for you to judge in this project now."),
            403: REFUSED,
            404: NO_PROJECT,
        },
    )
    def get(self, request: Request) -> Response:
        """Your next item: the same one until you answer it; an item is never served to you twice."""
        project = get_pairs_project(request.user, _project_query(request))
        try:
            judgement = queue.serve_next_item(project, request.user)
        except queue.PairQueueError as error:
            return _queue_refusal(error)
        if judgement is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(item_to_judge(judgement, queue.judge_progress(project, request.user)))


class PairJudgementView(APIView):
    @extend_schema(
        parameters=[id_in_path("pair item")],
        request=PairJudgementRequestSerializer,
        responses={
            201: PairJudgementResultSerializer,
            403: REFUSED,
            404: OpenApiResponse(ErrorSerializer, description="No such pair item in a pairs project of yours."),
            409: OpenApiResponse(
                PairConflictSerializer,
                description="Nothing was recorded: you judged this item already, it was not served to you, or "
                "your serve expired and its slot went to another judge (see code).",
            ),
        },
    )
    def post(self, request: Request, id: str) -> Response:
        """Answer H, N or ? on the item served to you; the answer carries your next item (``next``)."""
        item_id = int(id)
        if not 1 <= item_id <= MAX_ID:
            raise NotFound("No such pair item")
        body = PairJudgementRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        project = Project.objects.select_related("pair_config").filter(
            kind=Project.Kind.PAIRS, pair_items__pk=item_id
        ).first()
        if project is None:
            raise NotFound("No such pair item")
        try:
            answered = queue.record_and_serve_next(project, request.user, item_id, body.validated_data["label"])
        except queue.NotAJudge as error:
            if error.status == 404:
                raise NotFound("No such pair item") from None
            return _queue_refusal(error)
        except queue.PairQueueError as error:
            return _queue_refusal(error)
        judgement = answered.judgement
        payload = {
            "item": judgement.item_id,
            "label": judgement.label,
            "seconds": judgement.seconds,
            "answered_at": serializers.DateTimeField().to_representation(judgement.answered_at),
            "next": item_to_judge(answered.next, answered.progress) if answered.next is not None else None,
            "progress": answered.progress,
        }
        return Response(payload, status=status.HTTP_201_CREATED)


class UndoPairView(APIView):
    @extend_schema(
        parameters=PROJECT_QUERY,
        request=None,
        responses={
            200: PairToJudgeSerializer,
            403: REFUSED,
            404: NO_PROJECT,
            409: OpenApiResponse(PairConflictSerializer, description="You have no answer to undo in this project."),
        },
    )
    def post(self, request: Request) -> Response:
        """Take back your last answer in the project: the item comes back as your next one, unanswered."""
        project = get_pairs_project(request.user, _project_query(request))
        try:
            judgement = queue.undo_last_judgement(project, request.user)
        except queue.PairQueueError as error:
            return _queue_refusal(error)
        if judgement is None:
            return _queue_refusal(queue.NothingToUndo("you have no answer to undo in this project"))
        return Response(item_to_judge(judgement, queue.judge_progress(project, request.user)))


# --------------------------------------------------------------------------- lists


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
        project, role = get_pairs_project_for_user(request.user, options["project"])
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


class PairRoundListView(APIView):
    @extend_schema(responses={200: PairRoundRowSerializer(many=True)})
    def get(self, request: Request, slug: str) -> Response:
        """The project's rounds (members). Reviewers also get each round's items by state, filters, funnel and ratio."""
        project, role = get_pairs_project_for_user(request.user, slug)
        rounds = PairRound.objects.filter(project=project).select_related("detector").annotate(
            your_answers=Count(
                "judgements",
                filter=Q(judgements__judge=request.user, judgements__counted=True,
                         judgements__answered_at__isnull=False),
            )
        )
        by_state: dict[int, dict[str, int]] = {}
        if role in REVIEWER_ROLES:
            for round_id, state, count in (
                PairItem.objects.filter(project=project, round__isnull=False)
                .values_list("round_id", "state").annotate(n=Count("id")).order_by()
            ):
                by_state.setdefault(round_id, {})[state] = count
        timestamp = serializers.DateTimeField().to_representation
        rows = []
        for pair_round in rounds:
            row: dict[str, Any] = {
                "number": pair_round.number,
                "status": pair_round.status,
                "size": pair_round.size,
                "created_at": timestamp(pair_round.created_at),
                "closed_at": timestamp(pair_round.closed_at) if pair_round.closed_at else None,
                "your_answers": pair_round.your_answers,  # type: ignore[attr-defined]
            }
            if role in REVIEWER_ROLES:
                row.update(
                    items_by_state=by_state.get(pair_round.pk, {}),
                    filters=pair_round.filters,
                    funnel=pair_round.funnel,
                    ratio=pair_round.ratio,
                    promised_h_share=pair_round.promised_h_share,
                    detector=pair_round.detector.number if pair_round.detector else None,
                )
            rows.append(row)
        return Response(rows)


# --------------------------------------------------------------------------- spammer flags (admins)


FOR_ADMINS = OpenApiResponse(ErrorSerializer, description="Only the project's admins review spammer flags.")
FLAG_ID = OpenApiParameter("id", integer(1, MAX_ID), OpenApiParameter.PATH, description="The flag's id.")


def _flag_for_admin(user: Any, slug: str, id: str) -> tuple[Project, JudgeFlag]:
    project, _ = get_pairs_project_for_user(user, slug, roles=(Role.ADMIN,))
    flag_id = int(id)
    flag = (
        JudgeFlag.objects.select_related("judge", "reviewed_by").filter(project=project, pk=flag_id).first()
        if 1 <= flag_id <= MAX_ID else None
    )
    if flag is None:
        raise NotFound("No such flag")
    return project, flag


def _blocked_ids(project: Project) -> set[int]:
    return set(project.blocked_judges.values_list("judge_id", flat=True))


class JudgeFlagListView(APIView):
    @extend_schema(parameters=[FlagQuerySerializer], responses={200: JudgeFlagSerializer(many=True), 403: FOR_ADMINS})
    def get(self, request: Request, slug: str) -> Response:
        """Flagged judges with the rule they tripped, its figures and the review status (admins).

        Every judge is checked again first, on everyone's answers as they are now."""
        project, _ = get_pairs_project_for_user(request.user, slug, roles=(Role.ADMIN,))
        query = FlagQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        flags.refresh_flags(project)
        found = JudgeFlag.objects.filter(project=project).select_related("judge", "reviewed_by")
        if "status" in query.validated_data:
            found = found.filter(status=query.validated_data["status"])
        blocked = _blocked_ids(project)
        return Response([flag_payload(flag, blocked) for flag in found])


class BlockJudgeView(APIView):
    @extend_schema(
        parameters=[FLAG_ID], request=BlockRequestSerializer, responses={200: BlockResultSerializer, 403: FOR_ADMINS}
    )
    def post(self, request: Request, slug: str, id: str) -> Response:
        """Block the flagged judge: no more items, their judgements stop counting, their items go back to the queue."""
        project, flag = _flag_for_admin(request.user, slug, id)
        body = BlockRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        blocked = flags.block_judge(project, flag.judge, request.user, body.validated_data.get("reason", ""))
        flag.refresh_from_db()
        return Response({
            "flag": flag_payload(flag, _blocked_ids(project)),
            "items_recomputed": blocked.items_recomputed,  # type: ignore[attr-defined]
            "items_reopened": blocked.items_reopened,  # type: ignore[attr-defined]
        })


class DismissFlagView(APIView):
    @extend_schema(
        parameters=[FLAG_ID],
        request=None,
        responses={
            200: JudgeFlagSerializer,
            403: FOR_ADMINS,
            409: OpenApiResponse(ErrorSerializer, description="The judge is blocked; their flag cannot be dismissed."),
        },
    )
    def post(self, request: Request, slug: str, id: str) -> Response:
        """The judge is fine: the flag stays dismissed unless their figures get worse."""
        project, flag = _flag_for_admin(request.user, slug, id)
        try:
            flags.dismiss_flag(flag, request.user)
        except flags.FlagReviewError as error:
            return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
        flag.refresh_from_db()
        return Response(flag_payload(flag, _blocked_ids(project)))

