"""The judges API (project admins): judges, judge runs with their progress and judgements (and their cancel), and
imports.

Same rules as the pages (judging.access): outsiders 404, a role other than
admin 403 (annotators work blind and never see judges), anonymous callers 401;
a pairs project 400 on ``project`` to its members (judging.api.lookups). Writes
go through the services, which name the field at fault (400 ``{"field":
["message"]}``).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.urls import path, re_path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from annotate.api.errors import as_field_errors, field_error
from annotate.api.jobs import ALREADY_ENDED
from annotate.api.parsers import FILE_PARSERS, read_file_field, refuse_stopped_upload
from annotate.api.schema import integer
from annotate.api.serializers import MAX_ID, ErrorSerializer
from annotate.api.validation import NO_BODY, NoBodySerializer
from annotate.models import Batch, Project
from annotate.services.jobs import CancelRefused
from judging import access
from judging.api.lookups import NOT_A_SPAN_PROJECT, NOT_A_SPAN_PROJECT_OR_BAD_INPUT, span_project_lookup
from judging.api.serializers import (
    ImportErrorsSerializer,
    ImportRepeatedSerializer,
    JudgeCreateSerializer,
    JudgementImportReportSerializer,
    JudgementImportRequestSerializer,
    JudgementSerializer,
    JudgeRunDetailSerializer,
    JudgeRunRequestSerializer,
    JudgeRunSerializer,
    JudgeRunStartSerializer,
    JudgeSerializer,
)
from judging.models import Judge, Judgement, JudgeRun
from judging.services import ingest, runs
from judging.services.judges import JudgeSettingsError, check_new_judge, create_judge
from judging.services.runs.summary import JUDGEMENT_ORDER

FOR_ADMINS = OpenApiResponse(
    ErrorSerializer, description="Only the project's admins manage its judges (annotators work blind; auditors audit)."
)
RUN_ID = OpenApiParameter("id", integer(1, MAX_ID), OpenApiParameter.PATH, description="The judge run's id.")


class JudgeListView(generics.GenericAPIView):
    serializer_class = JudgeSerializer
    pagination_class = None

    def get_queryset(self) -> QuerySet[Judge]:
        return Judge.objects.none()  # the schema's; the views look the project up for the caller

    @extend_schema(responses={200: JudgeSerializer(many=True), 400: NOT_A_SPAN_PROJECT, 403: FOR_ADMINS})
    def get(self, request: Request, slug: str) -> Response:
        """The project's judges (admins): rubric, NLI and imported, with their settings (an API key's variable
        name, never a key)."""
        project = span_project_lookup(access.get_project_for_judging_admin, request.user, slug)
        return Response(JudgeSerializer(Judge.objects.filter(project=project).order_by("name"), many=True).data)

    @extend_schema(
        request=JudgeCreateSerializer,
        responses={201: JudgeSerializer, 400: NOT_A_SPAN_PROJECT_OR_BAD_INPUT, 403: FOR_ADMINS},
    )
    def post(self, request: Request, slug: str) -> Response:
        """Create a rubric or NLI judge (admins). Settings that cannot be used get one 400 naming every one of
        them, field -> messages; a name already used in the project is refused with the id of the judge holding
        it, so a script can go on with that judge."""
        project = span_project_lookup(access.get_project_for_judging_admin, request.user, slug)
        body = JudgeCreateSerializer(data=request.data)
        if not body.is_valid():
            raise ValidationError(_every_problem(project, body, request.user))
        settings = dict(body.validated_data)
        try:
            judge = create_judge(project, name=settings.pop("name"), kind=settings.pop("kind"), by=request.user,
                                 **settings)
        except JudgeSettingsError as error:
            raise ValidationError(error.problems) from None
        return Response(JudgeSerializer(judge).data, status=status.HTTP_201_CREATED)


def _every_problem(project: Project, body: JudgeCreateSerializer, by: Any) -> dict[str, list[str]]:
    """The serializer's refusals (types, lengths, ranges) and the service's for the fields that passed them."""
    refused = as_field_errors(body.errors)
    if api_settings.NON_FIELD_ERRORS_KEY in refused:  # not an object of fields at all: nothing more to check
        return refused
    accepted = body.accepted_values()
    _, more = check_new_judge(project, name=accepted.pop("name", None), kind=accepted.pop("kind", None),
                              settings=accepted, refused=set(refused), by=by)
    return refused | {field: messages for field, messages in more.items() if field not in refused}


class JudgeRunListView(generics.GenericAPIView):
    serializer_class = JudgeRunSerializer

    def get_queryset(self) -> QuerySet[JudgeRun]:
        return JudgeRun.objects.none()  # the schema's

    @extend_schema(
        responses={200: JudgeRunSerializer(many=True), 400: NOT_A_SPAN_PROJECT_OR_BAD_INPUT, 403: FOR_ADMINS}
    )
    def get(self, request: Request, slug: str) -> Response:
        """The project's judge runs, newest first, with their progress (admins)."""
        project = span_project_lookup(access.get_project_for_judging_admin, request.user, slug)
        found = (JudgeRun.objects.filter(project=project).select_related("judge", "rubric", "cancelled_by")
                 .order_by("-created_at", "-id"))
        page = self.paginate_queryset(found)
        return self.get_paginated_response(JudgeRunSerializer(page, many=True).data)

    @extend_schema(
        request=JudgeRunRequestSerializer,
        responses={
            201: OpenApiResponse(JudgeRunStartSerializer, description="A new run was started (`existing` false)."),
            200: OpenApiResponse(
                JudgeRunStartSerializer,
                description="The same run was still queued or running: this is it (`existing` true); nothing new was "
                "started.",
            ),
            400: NOT_A_SPAN_PROJECT_OR_BAD_INPUT,
            403: FOR_ADMINS,
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        """Start a run of a rubric or NLI judge in the background (admins): over every sample, one batch, or the
        flagged ones; `ask_again` (rubric judges) asks again for answers in the call cache that could not be read.
        Poll /api/judge-runs/{id}/ for its progress.

        Safe to retry: while a run of the same judge over the same scope (the same batch, the same `ask_again`,
        the rubric version a new run would use) is still queued or running, the answer is 200 with that run and
        `existing` true, and no second run starts; a new run is 201 with `existing` false. A finished or failed run
        does not count: asking again then starts a new one."""
        project = span_project_lookup(access.get_project_for_judging_admin, request.user, slug)
        body = JudgeRunRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        options = body.validated_data
        judge = Judge.objects.filter(project=project, pk=options["judge"]).first()
        if judge is None:
            raise field_error("judge", f"no judge {options['judge']} in project {project.slug!r}")
        batch = None
        if options["scope"] == JudgeRun.Scope.BATCH:
            if options.get("batch") is None:
                raise field_error("batch", "scope batch needs the batch's id")
            batch = Batch.objects.filter(project=project, pk=options["batch"]).first()
            if batch is None:
                raise field_error("batch", f"no batch {options['batch']} in project {project.slug!r}")
        elif options.get("batch") is not None:
            raise field_error("batch", f"a batch is given only with scope batch, not {options['scope']}")
        try:
            run, started = runs.start_or_reuse_run(project, judge, scope=options["scope"], batch=batch,
                                                   by=request.user, ask_again=options["ask_again"])
        except JudgeSettingsError as error:
            raise field_error(error.field, str(error)) from None
        answer = JudgeRunStartSerializer(run, context={"existing": not started}).data
        return Response(answer, status=status.HTTP_201_CREATED if started else status.HTTP_200_OK)


class JudgeRunDetailView(APIView):
    @extend_schema(parameters=[RUN_ID], responses={200: JudgeRunDetailSerializer, 403: FOR_ADMINS})
    def get(self, request: Request, id: str) -> Response:
        """A judge run's progress (status, done of total, scored, failed, calls, cached) and summary (admins)."""
        run = access.get_run_for_admin(request.user, int(id))
        return Response(JudgeRunDetailSerializer(run).data)


class JudgeRunCancelView(APIView):
    @extend_schema(
        parameters=[RUN_ID],
        request=NO_BODY,
        responses={200: JudgeRunSerializer, 400: NOT_A_SPAN_PROJECT, 403: FOR_ADMINS, 409: ALREADY_ENDED},
    )
    def post(self, request: Request, slug: str, id: str) -> Response:
        """Cancel a queued or running judge run (admins): it is marked failed, "Cancelled by <you> at <time>."
        (`status_label` "Cancelled", `cancelled_by` you, `cancelled_at` now), and a worker that picks it up later
        does nothing; one executing it sends no new call and stops at its next progress write, after storing the
        answers of the calls it had already sent (its `calls` and cost are what the endpoint received). The
        judgements it stored stay, their answers in the call cache, so a new run of the judge (which can now start)
        reuses them without paying again. Takes no fields."""
        project = span_project_lookup(access.get_project_for_judging_admin, request.user, slug)
        run_id = int(id)
        run = (JudgeRun.objects.filter(project=project, pk=run_id).select_related("judge", "rubric").first()
               if 1 <= run_id <= MAX_ID else None)
        if run is None:
            raise NotFound(f"{project.slug!r} has no judge run {id}")
        NoBodySerializer(data=request.data).is_valid(raise_exception=True)
        try:
            runs.cancel_run(run, request.user)
        except CancelRefused as refusal:
            return Response({"detail": str(refusal)}, status=status.HTTP_409_CONFLICT)
        return Response(JudgeRunSerializer(run).data)


class JudgeRunJudgementsView(generics.GenericAPIView):
    serializer_class = JudgementSerializer

    def get_queryset(self) -> QuerySet[Judgement]:
        return Judgement.objects.none()  # the schema's

    @extend_schema(parameters=[RUN_ID], responses={200: JudgementSerializer(many=True), 403: FOR_ADMINS})
    def get(self, request: Request, id: str) -> Response:
        """A run's judgements (admins), in the samples' order in the project (each batch's position, then each
        sample's position in its batch; a synthetic set's items by their sample, type and percent), the same on the
        run's page, in the exports and in `judge --json`, never the order the calls finished: status, score or p,
        reasoning, the raw answer, latency, tokens, cost. A parse error or endpoint error has no score, never a
        guessed one. Latency, tokens and cost are what this run spent: an answer from the call cache made no call
        (null latency and tokens, cost 0), the earlier call's figures are `cached_call_*`; a call sent while the
        judge had no prices has cost null (not known), never 0. `sample` and `sample_id`
        are the sample's database id, `sample_external_id` the id in the imported file (the exports' `sample`)."""
        run = access.get_run_for_admin(request.user, int(id))
        found = run.judgements.select_related("sample", "prompt_version").order_by(*JUDGEMENT_ORDER)
        page = self.paginate_queryset(found)
        return self.get_paginated_response(JudgementSerializer(page, many=True).data)


class JudgementImportView(APIView):
    parser_classes = FILE_PARSERS

    @extend_schema(
        request={"multipart/form-data": JudgementImportRequestSerializer},
        responses={
            201: JudgementImportReportSerializer,
            400: OpenApiResponse(
                ImportErrorsSerializer,
                description="Nothing was imported: `file` lists every problem, or says no file was sent (a body that "
                "is not multipart/form-data holds none); another field may name what is wrong (a form field the "
                "import does not take is named); `project` names the kind of a project that is not a span project "
                "(judges work on span projects only).",
            ),
            403: FOR_ADMINS,
            409: OpenApiResponse(
                ImportRepeatedSerializer,
                description="Nothing was imported: the files are well formed, but judgements in them were imported "
                "before (the same judge, sample and values); `file` names each repeated group of lines with the run "
                "that holds them and its date.",
            ),
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        """Import judge outputs made elsewhere (admins): JSONL files, all or nothing. Each judge name becomes an
        imported judge with one new run (one per run its lines name); a line naming a sample that does not exist is
        refused with its line. A request without a file (any other body) gets 400 naming `file`, and a form field
        other than `file` and `flag` gets 400 naming it. Judgements imported before get 409: the files are not at
        fault, what the project holds already is, so sending them again never duplicates a run."""
        project = span_project_lookup(access.get_project_for_judging_admin, request.user, slug)
        refuse_stopped_upload(request)
        body = JudgementImportRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        files = read_file_field(request, default_name="upload.jsonl")
        try:
            report = ingest.import_judgements(project, files, by=request.user, flag=body.validated_data["flag"])
        except ingest.JudgementsAlreadyImported as repeated:
            return Response({"detail": repeated.detail, "file": repeated.messages}, status=status.HTTP_409_CONFLICT)
        except ingest.JudgementImportFailed as error:
            extra = [f"... and {error.total - len(error.messages)} more"] if error.total > len(error.messages) else []
            raise field_error("file", *error.messages, *extra) from None
        return Response(report.as_dict(), status=status.HTTP_201_CREATED)


# Ids as [0-9]{1,18}, like annotate's, so a longer number names no object (404, not 500).
urlpatterns = [
    path("projects/<slug:slug>/judges/", JudgeListView.as_view(), name="judging-api-judges"),
    path("projects/<slug:slug>/judge-runs/", JudgeRunListView.as_view(), name="judging-api-runs"),
    path("projects/<slug:slug>/judgements/import/", JudgementImportView.as_view(), name="judging-api-import"),
    re_path(r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/judge-runs/(?P<id>[0-9]{1,18})/cancel/$",
            JudgeRunCancelView.as_view(), name="judging-api-run-cancel"),
    re_path(r"^judge-runs/(?P<id>[0-9]{1,18})/$", JudgeRunDetailView.as_view(), name="judging-api-run"),
    re_path(r"^judge-runs/(?P<id>[0-9]{1,18})/judgements/$", JudgeRunJudgementsView.as_view(),
            name="judging-api-run-judgements"),
]
