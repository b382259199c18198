"""A judge against the people who audited its outputs, a project's synthetic sets and a set's paper tables, as JSON;
and a synthetic set's cancel.

Each answer is the object its page shows and its command prints, from the same service, computed for each
request: ``judging.services.people.judge_vs_people`` (the judge-vs-people page) and
``judging.services.synthetic.paper_tables`` (the synthetic set page and ``judge_tables --json``). The
serializers below only describe those objects for the schema and hand them on; they compute nothing.

Same rules as the pages (judging.access): the project's admins only, since judge scores are theirs (annotators
work blind, auditors audit), so other roles 403; outsiders 404; anonymous callers 401; a pairs project 400 on
``project`` to its members (judging.api.lookups). Neither endpoint reads a query parameter, so any is ignored, as
on the other judging reads without parameters (the judge list). The cancel is a write, through
``judging.services.synthetic.cancel_synthetic_set`` as the set's page does it, answered as the judge runs' cancel is.
"""

from __future__ import annotations

from django.urls import re_path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.api.jobs import ALREADY_ENDED
from annotate.api.schema import integer
from annotate.api.serializers import MAX_ID, ErrorSerializer
from annotate.api.validation import NO_BODY, NoBodySerializer
from annotate.services.jobs import CancelRefused
from judging import access
from judging.api.lookups import NOT_A_SPAN_PROJECT, span_project_lookup
from judging.api.serializers import UsDollarsField
from judging.models import Judge, JudgeRun, SyntheticSet
from judging.people import LEVELS
from judging.services.people import judge_vs_people
from judging.services.synthetic import cancel_synthetic_set, paper_tables
from judging.synthetic import HALLUCINATION_TYPES

FOR_ADMINS = OpenApiResponse(
    ErrorSerializer, description="Only the project's admins see its judges' figures, as on the pages (annotators work "
    "blind; auditors audit)."
)
JUDGE_ID = OpenApiParameter("id", integer(1, MAX_ID), OpenApiParameter.PATH, description="The judge's id.")
SET_ID = OpenApiParameter("id", integer(1, MAX_ID), OpenApiParameter.PATH, description="The synthetic set's id.")
NULL_WITH_REASON = "null when undefined, with the reason in `reasons` under this field's name."


# --------------------------------------------------------------------------- judge against people


class PeopleJudgeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    # Named, not an enum: the judge's kind already has its enum in the schema (Judge), which a second one would
    # rename (drf-spectacular's name collision).
    kind = serializers.CharField(help_text=f"The judge's kind: {', '.join(Judge.Kind.values)}.")
    mode = serializers.CharField(help_text='"reasoning" or "score only" for rubric judges, else the kind\'s name.')


def _reason() -> serializers.CharField:
    return serializers.CharField(required=False, help_text="Present only when that figure is null.")


class PeopleReasonsSerializer(serializers.Serializer):
    """Why each null figure is undefined, keyed by the figure's name; a defined figure has no entry."""

    alpha_ordinal_with_judge = _reason()
    alpha_ordinal_auditors = _reason()
    alpha_interval_with_judge = _reason()
    alpha_interval_auditors = _reason()
    mean_residual = _reason()
    mean_absolute_residual = _reason()
    flags_confirmed = _reason()


def _alpha(who: str) -> serializers.FloatField:
    return serializers.FloatField(allow_null=True, help_text=f"Krippendorff's alpha, {who}; {NULL_WITH_REASON}")


def _alpha_items(what: str) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=0, help_text=f"Outputs that entered {what} (two or more ratings).")


class JudgeVsPeopleSerializer(serializers.Serializer):
    """The judge-vs-people page's figures: the judge's latest judgement of each audited output beside every answered
    audit of it. The judge's figure is its rubric score, or 1 + 4p for an NLI judge (our scaling), rounded to the
    nearest level (halves up) for ordinal alpha and the confusion matrix."""

    judge = PeopleJudgeSerializer()
    items = serializers.IntegerField(min_value=0, help_text="Audited outputs that have a score from this judge.")
    auditors = serializers.IntegerField(min_value=0, help_text="Auditors who answered on those outputs.")
    pairs = serializers.IntegerField(min_value=0, help_text="Answered audits of those outputs: one per (output, auditor).")
    items_without_judge_score = serializers.IntegerField(
        min_value=0, help_text="Audited outputs the judge failed on or never scored: left out of every figure that "
        "involves the judge."
    )
    alpha_ordinal_with_judge = _alpha("ordinal, the judge as one more rater")
    alpha_ordinal_with_judge_items = _alpha_items("alpha_ordinal_with_judge")
    alpha_ordinal_auditors = _alpha("ordinal, among the auditors alone (every answered audit, whatever the judge did)")
    alpha_ordinal_auditors_items = _alpha_items("alpha_ordinal_auditors")
    alpha_interval_with_judge = _alpha("interval, the judge as one more rater")
    alpha_interval_with_judge_items = _alpha_items("alpha_interval_with_judge")
    alpha_interval_auditors = _alpha("interval, among the auditors alone (every answered audit, whatever the judge "
                                     "did)")
    alpha_interval_auditors_items = _alpha_items("alpha_interval_auditors")
    confusion = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField(min_value=0), min_length=len(LEVELS),
                                    max_length=len(LEVELS)),
        min_length=len(LEVELS), max_length=len(LEVELS),
        help_text="5 x 5 counts, one per answered audit: row i is the judge's level i + 1, column j the auditor's "
        "score j + 1; the diagonal is agreement.",
    )
    mean_residual = serializers.FloatField(
        allow_null=True, help_text="Mean of auditor's score - judge's figure over the audits: positive, the judge is "
        f"harsher than the people; {NULL_WITH_REASON}"
    )
    mean_absolute_residual = serializers.FloatField(allow_null=True, help_text=f"Mean of its absolute value; "
                                                    f"{NULL_WITH_REASON}")
    flags_confirmed = serializers.FloatField(
        allow_null=True, min_value=0, max_value=1,
        help_text="Share (0..1) of the judge's flagged, audited outputs whose auditors' median score is at most "
        f"llm_flag_at_most; {NULL_WITH_REASON}",
    )
    flags_confirmed_count = serializers.IntegerField(min_value=0, help_text="Flagged, audited outputs confirmed.")
    flags_audited = serializers.IntegerField(min_value=0, help_text="Flagged, audited outputs: the share's base.")
    reasons = PeopleReasonsSerializer()
    probability = serializers.BooleanField(
        help_text="The judge gives p (NLI, or imported with p): its figure is 1 + 4p, rounded to a level where one "
        "is needed."
    )
    llm_flag_at_most = serializers.IntegerField(help_text="The project's flag threshold for LLM scores.")
    nli_flag_below = serializers.FloatField(help_text="The project's flag threshold for NLI p.")


class JudgeVsPeopleView(APIView):
    @extend_schema(parameters=[JUDGE_ID],
                   responses={200: JudgeVsPeopleSerializer, 400: NOT_A_SPAN_PROJECT, 403: FOR_ADMINS})
    def get(self, request: Request, slug: str, id: str) -> Response:
        """The judge against the auditors (admins): alpha, ordinal and interval, with the judge as a rater and
        among the auditors alone, the confusion matrix, the mean residual and the share of its flags the auditors
        confirmed; the judge-vs-people page's figures. An undefined figure is null, its reason in `reasons`."""
        judge = span_project_lookup(access.get_judge_for_admin, request.user, slug, int(id))
        return Response(JudgeVsPeopleSerializer(judge_vs_people(judge.project, judge)).data)


# --------------------------------------------------------------------------- a synthetic set's tables

NULL_MEAN = "null when no judgement there has a score (its pairs is 0): failed ones never count as a number."


class ResidualPairsSerializer(serializers.Serializer):
    gold = serializers.IntegerField(min_value=0)
    intrinsic = serializers.IntegerField(min_value=0)
    extrinsic = serializers.IntegerField(min_value=0)
    overall = serializers.IntegerField(min_value=0)


class ResidualRowSerializer(serializers.Serializer):
    judge = serializers.CharField()
    mode = serializers.CharField()
    gold = serializers.FloatField(allow_null=True, help_text=f"Mean |5 - score| over gold outputs; {NULL_MEAN}")
    intrinsic = serializers.FloatField(allow_null=True, help_text=f"Mean |1 - score|; {NULL_MEAN}")
    extrinsic = serializers.FloatField(allow_null=True, help_text=f"Mean |1 - score|; {NULL_MEAN}")
    overall = serializers.FloatField(
        allow_null=True, help_text=f"Mean over all the judge's pairs, not over the columns; {NULL_MEAN}"
    )
    pairs = ResidualPairsSerializer(help_text="Scored pairs behind each mean.")
    failed = serializers.IntegerField(min_value=0, help_text="Judgements without a score, left out of the means.")


class ResidualTableSerializer(serializers.Serializer):
    columns = serializers.ListField(child=serializers.CharField())
    rows = ResidualRowSerializer(many=True)


class SensitivityStepSerializer(serializers.Serializer):
    percent = serializers.IntegerField(min_value=0, max_value=100)
    mean = serializers.FloatField(allow_null=True, help_text=f"Mean score at this step; {NULL_MEAN}")
    pairs = serializers.IntegerField(min_value=0)
    failed = serializers.IntegerField(min_value=0)


class SensitivityRowSerializer(serializers.Serializer):
    judge = serializers.CharField()
    mode = serializers.CharField()
    type = serializers.ChoiceField(choices=list(HALLUCINATION_TYPES))
    steps = SensitivityStepSerializer(many=True)
    delta = serializers.FloatField(
        allow_null=True, help_text="(mean at 100% - mean at 0%) / sentences per output; null when either mean is."
    )
    failed = serializers.IntegerField(min_value=0)


class SensitivityTableSerializer(serializers.Serializer):
    percents = serializers.ListField(child=serializers.IntegerField(min_value=0, max_value=100))
    rows = SensitivityRowSerializer(many=True)


class CostRowSerializer(serializers.Serializer):
    judge = serializers.CharField()
    mode = serializers.CharField()
    calls = serializers.IntegerField(min_value=0, help_text="Calls sent and answered (parse errors included).")
    parse_errors = serializers.IntegerField(min_value=0)
    cached = serializers.IntegerField(min_value=0, help_text="Answered from the call cache: no call, no cost.")
    errors = serializers.IntegerField(min_value=0, help_text="Judgements that got no answer.")
    failed = serializers.IntegerField(min_value=0)
    latency = serializers.FloatField(allow_null=True, help_text="Mean seconds per call; null when no call reports it.")
    output_tokens = serializers.FloatField(allow_null=True, help_text="Mean per call; null when no call reports them.")
    cost = UsDollarsField(
        allow_null=True, help_text="Mean US dollars per call, over the `cost_calls` calls whose price is known; null "
        "when none is (an NLI judge, no token usage reported, or every call sent while the judge had no prices).")
    cost_calls = serializers.IntegerField(
        min_value=0, help_text="The calls `cost` is the mean of: those whose price is known (below `calls` when some "
        "reported no token usage or are `unpriced`).")
    unpriced = serializers.IntegerField(
        min_value=0, help_text="Calls that reported their tokens while the judge had no prices (US$ per million "
        "tokens): what they cost is not known, so they are left out of `cost`, never counted as 0.")


class CostTableSerializer(serializers.Serializer):
    rows = CostRowSerializer(many=True)


class TableRunSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    judge = serializers.CharField()
    mode = serializers.CharField()
    status = serializers.ChoiceField(choices=JudgeRun.Status.choices)  # the model's: the schema's JudgeRunStatusEnum
    status_label = serializers.CharField(help_text="The status as the pages show it: \"Cancelled\" for a cancelled "
                                         "run, which is stored as failed.")
    cancelled_by = serializers.CharField(allow_null=True, help_text="Who cancelled the run; null unless cancelled, or "
                                         "once that user has been deleted (cancelled_at still says when).")
    cancelled_at = serializers.DateTimeField(allow_null=True, help_text="When the run was cancelled; null unless "
                                             "cancelled.")
    judged = serializers.IntegerField(min_value=0)
    total = serializers.IntegerField(min_value=0)


class PaperTablesSerializer(serializers.Serializer):
    """The ``judge_tables --json`` object: the paper's tables over each judge's latest run on the set (a run in
    progress counts what it has so far)."""

    residual = ResidualTableSerializer(help_text="Mean |expected - score|: expected 5 for gold, 1 for hallucinated.")
    sensitivity = SensitivityTableSerializer(help_text="Mean score per share of sentences replaced, and the delta.")
    cost = CostTableSerializer(help_text="Mean latency, output tokens and price per call, per judge and mode.")
    runs = TableRunSerializer(many=True, help_text="The runs the tables read, one per judge.")


class SyntheticSetRowSerializer(serializers.ModelSerializer):
    """A synthetic set as its list shows it: where its tables are, and how far the writing got."""

    writer = serializers.CharField(source="writer.name", allow_null=True, default=None,
                                   help_text="The rubric judge that wrote the rewrites; null once it was deleted.")
    status = serializers.ChoiceField(choices=SyntheticSet.Status.choices, help_text="The writing job's state.")
    status_label = serializers.CharField(read_only=True, help_text='The status as the pages show it: "Cancelled" '
                                         "for a cancelled set (its `status` stays failed).")
    cancelled_by = serializers.CharField(
        source="cancelled_by.username", read_only=True, allow_null=True, default=None,
        help_text="Who cancelled the set (status failed, status_label \"Cancelled\"); null unless cancelled, or once "
        "that user has been deleted (cancelled_at still says when).",
    )
    cancelled_at = serializers.DateTimeField(
        read_only=True, allow_null=True, help_text="When the set was cancelled; null unless cancelled."
    )
    tables = serializers.SerializerMethodField(help_text="The address of the set's tables.")

    class Meta:
        model = SyntheticSet
        fields = ["id", "name", "writer", "status", "status_label", "cancelled_by", "cancelled_at", "done", "total",
                  "sentences_per_output", "seed", "error", "created_at", "tables"]
        extra_kwargs = {"error": {"help_text": "The set's notes (outputs skipped; for an imported set, fields of "
                                               "its file the format does not define, not imported), then why it "
                                               "stopped: "
                                               "\"Cancelled by <user> at <time>.\" once cancelled."}}

    def get_tables(self, synthetic_set: SyntheticSet) -> str:
        return f"/api/projects/{synthetic_set.project.slug}/synthetic-sets/{synthetic_set.pk}/tables/"


class SyntheticSetListView(APIView):
    @extend_schema(responses={200: SyntheticSetRowSerializer(many=True), 400: NOT_A_SPAN_PROJECT, 403: FOR_ADMINS})
    def get(self, request: Request, slug: str) -> Response:
        """The project's synthetic sets, newest first (admins), each with the address of its tables."""
        project = span_project_lookup(access.get_project_for_judging_admin, request.user, slug)
        sets = (SyntheticSet.objects.filter(project=project).select_related("writer", "project", "cancelled_by")
                .order_by("-pk"))
        return Response(SyntheticSetRowSerializer(sets, many=True).data)


class SyntheticTablesView(APIView):
    @extend_schema(parameters=[SET_ID],
                   responses={200: PaperTablesSerializer, 400: NOT_A_SPAN_PROJECT, 403: FOR_ADMINS})
    def get(self, request: Request, slug: str, id: str) -> Response:
        """A synthetic set's residual, sensitivity and cost tables (admins); the set page's tables and the
        ``judge_tables --json`` object."""
        synthetic_set = span_project_lookup(access.get_synthetic_set_for_admin, request.user, slug, int(id))
        return Response(PaperTablesSerializer(paper_tables(synthetic_set)).data)


class SyntheticSetCancelView(APIView):
    @extend_schema(
        parameters=[SET_ID],
        request=NO_BODY,
        responses={200: SyntheticSetRowSerializer, 400: NOT_A_SPAN_PROJECT, 403: FOR_ADMINS, 409: ALREADY_ENDED},
    )
    def post(self, request: Request, slug: str, id: str) -> Response:
        """Cancel a queued or running synthetic set (admins): it is marked failed, its `error` ending "Cancelled by
        <you> at <time>." (`status_label` "Cancelled", `cancelled_by` you, `cancelled_at` now), and a worker that
        picks it up later asks the writer nothing;
        one writing it stops at its next progress write. The rewrites it stored stay, and Resume on the set's page
        goes on from there, asking only for the rewrites it lacks. Takes no fields."""
        project = span_project_lookup(access.get_project_for_judging_admin, request.user, slug)
        set_id = int(id)
        synthetic_set = (SyntheticSet.objects.filter(project=project, pk=set_id).select_related("writer", "project")
                         .first() if 1 <= set_id <= MAX_ID else None)
        if synthetic_set is None:
            raise NotFound(f"{project.slug!r} has no synthetic set {id}")
        NoBodySerializer(data=request.data).is_valid(raise_exception=True)
        try:
            cancel_synthetic_set(synthetic_set, request.user)
        except CancelRefused as refusal:
            return Response({"detail": str(refusal)}, status=status.HTTP_409_CONFLICT)
        return Response(SyntheticSetRowSerializer(synthetic_set).data)


# Ids as [0-9]{1,18}, like the rest of the API, so a longer number names no object (404, not 500).
urlpatterns = [
    re_path(r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/judges/(?P<id>[0-9]{1,18})/people/$", JudgeVsPeopleView.as_view(),
            name="judging-api-judge-people"),
    re_path(r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/synthetic-sets/$", SyntheticSetListView.as_view(),
            name="judging-api-synthetic-sets"),
    re_path(r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/synthetic-sets/(?P<id>[0-9]{1,18})/tables/$",
            SyntheticTablesView.as_view(), name="judging-api-synthetic-tables"),
    re_path(r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/synthetic-sets/(?P<id>[0-9]{1,18})/cancel/$",
            SyntheticSetCancelView.as_view(), name="judging-api-synthetic-cancel"),
]
