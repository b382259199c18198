"""Agreement and results as JSON: the same objects the commands print with --json.

Admins and auditors only (annotators 403, outsiders 404), as on the pages.
Span projects only: a pairs project gets 400 on ``project`` pointing at its
own figures (the pairs endpoints). Every number comes from annotate.services.stats, the service the
commands call, as of the current data: a figure set kept for the current data version is served as it is,
else the figures are computed in the request and kept (results_cache.current_figures), so the API never
answers with the stale figures a page may show while they refresh. Where a figure is undefined (a round nobody has submitted a
batch of yet, a detector with no output on the judged samples) the API says why, as the results page does:
every generator and every detector of the project is listed, with n 0, null figures and a ``reason``
(stats.explained_halu_rates, stats.explained_detector_eval); where every figure is defined the objects are the
commands' ones. Bad query parameters get
400 with the parameter named: ``{"scheme": ["..."]}``; an empty one (``?level=``)
too, rather than the default (annotate.api.validation.QueryParamsSerializer).
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate import agreement, results
from annotate.api.errors import field_error
from annotate.api.serializers import MAX_ROUND, ErrorSerializer
from annotate.api.validation import QueryParamsSerializer
from annotate.models import Project
from annotate.services import results_cache, stats
from annotate.views.results import get_project_for_results

MAX_BOOTSTRAP = 10_000


# --------------------------------------------------------------------------- queries


class AgreementQuerySerializer(QueryParamsSerializer):
    scheme = serializers.CharField(
        help_text="Label scheme: groups of C, B, Q, U in order, '|' between groups, '+' merging, e.g. 'C+B|Q+U'."
    )
    level = serializers.ChoiceField(choices=agreement.LEVELS, default="nominal")
    aggregate = serializers.ChoiceField(choices=agreement.AGGREGATES, default="pooled")
    round = serializers.IntegerField(min_value=1, max_value=MAX_ROUND, default=1)
    bootstrap = serializers.IntegerField(
        min_value=0, max_value=MAX_BOOTSTRAP, default=0,
        help_text="Pooled only: resamples for a 95% bootstrap interval (0 = none).",
    )

    def validate_scheme(self, value: str) -> str:
        try:
            return agreement.parse_scheme(value).text
        except agreement.SchemeError as error:
            raise serializers.ValidationError(str(error)) from None

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        if data["bootstrap"] and data["aggregate"] != "pooled":
            raise serializers.ValidationError(
                {"bootstrap": "a bootstrap interval is only computed for the pooled alpha"}
            )
        return data


class RoundQuerySerializer(QueryParamsSerializer):
    round = serializers.IntegerField(min_value=1, max_value=MAX_ROUND, default=1)


class DetectorQuerySerializer(RoundQuerySerializer):
    threshold = serializers.FloatField(
        min_value=0.0, max_value=1.0, default=0.5,
        help_text="Probability of consistency at or above which a prediction counts as consistent.",
    )
    hallucinated = serializers.ChoiceField(
        choices=list(results.TRUTH_SETS), default=results.DEFAULT_TRUTH,
        help_text="The human truth: a sample is hallucinated when its worst label is in this set. U: Unwanted only; "
        "UQ: Unwanted or Questionable (the default); UQB: Unwanted, Questionable or Benign.",
        error_messages={
            "invalid_choice": f'"{{input}}" is not a truth set: send one of {", ".join(results.TRUTH_SETS)} '
            "(U: Unwanted only; UQ: Unwanted or Questionable; UQB: also Benign)",
        },
    )


# --------------------------------------------------------------------------- responses (for the schema)


class BatchAlphaSerializer(serializers.Serializer):
    batch = serializers.CharField()
    alpha = serializers.FloatField(allow_null=True)
    reason = serializers.CharField(allow_null=True)
    units = serializers.IntegerField()
    annotators = serializers.IntegerField()


class AgreementReportSerializer(serializers.Serializer):
    alpha = serializers.FloatField(allow_null=True)
    reason = serializers.CharField(allow_null=True, help_text="Why alpha is undefined, when it is.")
    units = serializers.IntegerField()
    annotators = serializers.IntegerField()
    per_batch = BatchAlphaSerializer(many=True)
    scheme = serializers.CharField()
    level = serializers.CharField()
    aggregate = serializers.CharField()
    round = serializers.IntegerField()
    interval = serializers.ListField(
        child=serializers.FloatField(), min_length=2, max_length=2, allow_null=True, required=False,
        help_text="95% bootstrap interval [low, high]; only when bootstrap > 0; null when alpha is undefined.",
    )
    bootstrap_resamples = serializers.IntegerField(required=False)
    batches_defined = serializers.IntegerField(
        required=False, help_text="batch-mean only: how many batches have a defined alpha (the ones averaged)."
    )
    batches_undefined = serializers.IntegerField(
        required=False,
        help_text="batch-mean only: how many batches have an undefined alpha, left out of the mean (their reasons "
        "are in per_batch).",
    )


# Both results are objects keyed by generator / detector name. The rates are a type hint; the detector scores a
# serializer, for the help text of each field.
GeneratorRates = TypedDict(  # noqa: UP013 (the keys "U+Q" and "U+Q+B" are not identifiers)
    "GeneratorRates",
    {"n": int, "U": float | None, "U+Q": float | None, "U+Q+B": float | None, "reason": NotRequired[str]},
)
GeneratorRates.__doc__ = (
    "One generator's rates in percent over its n samples with a submitted verdict in the round. With n 0 the rates "
    "are null and reason says why (no batch submitted in the round yet, or none holding this generator's samples)."
)


class DetectorScoresSerializer(serializers.Serializer):
    """One detector's evaluation (annotate.results.evaluate_detectors): n + invalid is the number of samples,
    and missing is part of invalid."""

    n = serializers.IntegerField(help_text="Valid predictions: the samples the metrics are computed over.")
    invalid = serializers.IntegerField(
        help_text="Every prediction left out of the metrics, missing ones included: n + invalid is the number of "
        "samples. invalid - missing are outputs that are no usable score (a parse or endpoint error, a string, "
        "a value outside 0-1)."
    )
    missing = serializers.IntegerField(
        help_text="The part of invalid with no output at all (a null in the metadata, a judge that never judged "
        "the sample); always <= invalid, never to be added to it."
    )
    balanced_accuracy = serializers.FloatField(allow_null=True, help_text="Percent; null when n is 0.")
    f1_macro = serializers.FloatField(allow_null=True, help_text="Percent; null when n is 0.")
    rule = serializers.CharField(help_text="When a prediction counts as consistent (p >= threshold, or a 0/1 verdict).")
    reason = serializers.CharField(
        required=False,
        help_text="Only when n is 0: why the figures are null (no sample has a submitted verdict in the round yet, "
        "the detector has no output on the judged samples, or none of its outputs there is a usable score).",
    )


RATES_RESPONSE = dict[str, GeneratorRates]
# Keyed by detector name: a DictField, which FaithLabAutoSchema maps as a field (annotate.api.schema).
DETECTORS_RESPONSE = serializers.DictField(child=DetectorScoresSerializer())


# Annotators are refused (they must not see the others' work); outsiders get the shared 404.
FOR_ADMINS_AND_AUDITORS = OpenApiResponse(
    ErrorSerializer, description="Only the project's admins and auditors see agreement and results."
)


# --------------------------------------------------------------------------- views


def span_project_for_results(user: Any, slug: str) -> Project:
    """The project, for its admins and auditors, when it is a span project: these figures are span annotation's.

    A pairs project has no span rounds; its figures are the pairs endpoints'.
    """
    project, _ = get_project_for_results(user, slug)
    if project.kind == Project.Kind.PAIRS:
        raise field_error(
            "project",
            f"{project.slug!r} is a pairs project: agreement, hallucination rates and detector evaluation are "
            "figures of span annotation projects. A pairs project's figures are at "
            f"/api/projects/{project.slug}/pair-rounds/ (rounds, items by state, funnel, ratio), "
            f"/api/pairs/?project={project.slug} (items with votes and consensus) and "
            f"/api/projects/{project.slug}/export/?format=pairs (every item with its votes)",
        )
    return project


def _checked(project: Project, query: serializers.Serializer) -> dict[str, Any]:
    query.is_valid(raise_exception=True)
    data = dict(query.validated_data)
    known = stats.project_rounds(project)
    if data["round"] not in known:
        raise field_error("round", stats.no_round_message(project, data["round"], known))
    return data


class AgreementView(APIView):
    @extend_schema(
        parameters=[AgreementQuerySerializer], responses={200: AgreementReportSerializer, 403: FOR_ADMINS_AND_AUDITORS}
    )
    def get(self, request: Request, slug: str) -> Response:
        """Krippendorff's alpha of the worst-pooled sample labels; the ``agreement --json`` object."""
        project = span_project_for_results(request.user, slug)
        query = _checked(project, AgreementQuerySerializer(data=request.query_params))
        report = results_cache.current_figures(
            project, "api-agreement", scheme=query["scheme"], level=query["level"], aggregate=query["aggregate"],
            round=query["round"], bootstrap=query["bootstrap"],
        )
        return Response(report)


class HaluRatesView(APIView):
    @extend_schema(parameters=[RoundQuerySerializer], responses={200: RATES_RESPONSE, 403: FOR_ADMINS_AND_AUDITORS})
    def get(self, request: Request, slug: str) -> Response:
        """Hallucination rate per generator (U, U+Q, U+Q+B, percent); the ``halu_rates --json`` object, with
        every generator of the project: one without a submitted verdict in the round has null rates and a reason."""
        project = span_project_for_results(request.user, slug)
        query = _checked(project, RoundQuerySerializer(data=request.query_params))
        return Response(results_cache.current_figures(project, "api-halu-rates", round=query["round"]))


# The truth set the figures were computed against. The body is keyed by detector name, so a key for it would read
# as one more detector: a header says it instead, as the command says it on stderr (detector_eval --json).
HALLUCINATED_HEADER = "X-FaithLab-Hallucinated"
HALLUCINATED_RESPONSE_HEADER = OpenApiParameter(
    HALLUCINATED_HEADER, str, OpenApiParameter.HEADER, response=[200], enum=list(results.TRUTH_SETS),
    description="The truth set the figures were computed against, the one asked with `?hallucinated=` or the "
    f"default ({results.DEFAULT_TRUTH}): a sample is hallucinated when its worst label is in it (U: Unwanted only; "
    "UQ: Unwanted or Questionable; UQB: also Benign). A header, since every key of the body names a detector.",
)


class DetectorEvalView(APIView):
    @extend_schema(
        parameters=[DetectorQuerySerializer, HALLUCINATED_RESPONSE_HEADER],
        responses={200: DETECTORS_RESPONSE, 403: FOR_ADMINS_AND_AUDITORS},
    )
    def get(self, request: Request, slug: str) -> Response:
        """Balanced accuracy and F1-macro of the detectors in the samples' metadata and of the judges, against the
        truth ``hallucinated`` (worst label U or Q by default); ``detector_eval --json``, with every detector of the project: one with n 0 has null figures and a reason.
        The truth set used is in the ``X-FaithLab-Hallucinated`` header (the body's keys are detectors)."""
        project = span_project_for_results(request.user, slug)
        query = _checked(project, DetectorQuerySerializer(data=request.query_params))
        answer = Response(
            results_cache.current_figures(
                project, "api-detector-eval", threshold=query["threshold"], round=query["round"],
                hallucinated=query["hallucinated"],
            )
        )
        answer[HALLUCINATED_HEADER] = query["hallucinated"]
        return answer
