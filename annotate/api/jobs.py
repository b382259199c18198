"""A project's background job through the API: what a script polls after an import queued one (``embedding_job``),
an export, a perturbation or a pair round; and cancelling one that no worker runs.

The roles are the project page's job lines' (access.get_job_for_user): a span project shows its embedding jobs
to admins and its exports to admins and auditors, a pairs project its jobs to admins, auditors and curators;
another member gets 403, an outsider 404.

Cancels (admins): ``CancelJobView`` is every cancel's base, a span project's embedding and export jobs here, a pairs
project's round and perturbation jobs in annotate.api.pairs.jobs. The project page and the job pages offer the
same cancels through the same services.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, ClassVar

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate import access
from annotate.api.schema import id_in_path, integer
from annotate.api.serializers import MAX_ID, ErrorSerializer
from annotate.api.validation import NO_BODY, NoBodySerializer
from annotate.models import Job, Project
from annotate.services import export, jobs, reembedding


class JobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=Job.Kind.choices, help_text="What the job does.")
    status = serializers.ChoiceField(
        choices=Job.Status.choices, help_text="`queued` or `running` while it works; `done` or `failed` when it ends."
    )
    done = serializers.IntegerField(help_text="How much of `total` is done (the unit depends on the kind, as on the "
                                              "project page: texts, samples, items ...).")
    total = serializers.IntegerField()
    error = serializers.CharField(help_text="Why it failed or stopped; empty otherwise.")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True, help_text="Null until it ends.")
    resumed = serializers.IntegerField(min_value=0, help_text="Times a starting worker queued the job again after its "
                                       "worker stopped (it goes on where it stopped; an export is written again).")
    resumed_at = serializers.DateTimeField(allow_null=True, help_text="When it was last queued again; null if never.")


class ProjectJobView(APIView):
    @extend_schema(
        parameters=[id_in_path("job")],
        responses={
            200: JobSerializer,
            403: OpenApiResponse(ErrorSerializer, description="The project page does not show this role that kind "
                                                              "of job."),
        },
    )
    def get(self, request: Request, slug: str, id: str) -> Response:
        """One of the project's jobs and its progress, for the roles its project page shows it to."""
        job = access.get_job_for_user(request.user, slug, int(id))
        return Response(JobSerializer(job).data)


# --- cancelling a job ------------------------------------------------------------------------------------------------

ALREADY_ENDED = OpenApiResponse(ErrorSerializer, description="The job has already ended (done, failed or cancelled "
                                "before); detail says how. Nothing was changed.")


def job_fields(job: Job) -> dict[str, Any]:
    """What every cancellable job's answer says: who started it, when it ended, who cancelled it."""
    timestamp = serializers.DateTimeField().to_representation
    return {
        "id": job.pk,
        "status": job.status,
        "error": job.error,
        "created_by": job.created_by.get_username() if job.created_by else None,
        "created_at": timestamp(job.created_at),
        "finished_at": timestamp(job.finished_at) if job.finished_at else None,
        "cancelled_by": job.options.get("cancelled_by"),
    }


def progress_job_payload(job: Job) -> dict[str, Any]:
    return {**job_fields(job), "done": job.done, "total": job.total}


class CancelJobView(APIView):
    """Cancel a project's queued or running job of one kind (admins); a subclass names the kind and the project.

    Every cancel looks the job up in the project, refuses an ended one with 409 and answers the job as it now is:
    only the project lookup, the kind, its name in messages, the service that cancels it and the answer's fields
    differ, and those are the subclass's. Each subclass gets its schema from ``cancel_schema``.
    """

    kind: ClassVar[str]  # a Job.Kind
    noun: ClassVar[str]  # how the 404 and the schema name the job: "round job"
    job_id_help: ClassVar[str]  # the schema's description of the path's id: where the caller finds it
    answer: ClassVar[type[serializers.Serializer]]  # the 200's schema; ``payload`` builds it
    # staticmethod(...) on the subclass: the service that cancels the job, raising jobs.CancelRefused once it ended.
    cancel: ClassVar[Callable[[Job, Any], Job]]
    payload: ClassVar[Callable[[Job], dict[str, Any]]]
    refusals: ClassVar[dict[int, OpenApiResponse]] = {}  # the schema's answers besides 200, 403 and 409

    def project_for(self, user: Any, slug: str) -> Project:
        """The span project ``slug`` names, for its admins: 404 for outsiders and pairs projects, 403 for another
        role (a pairs project's cancels override it)."""
        return access.get_span_project_for_admin(user, slug)

    def post(self, request: Request, slug: str, id: str) -> Response:
        # The schema's description is the subclass's docstring (cancel_schema), not this method's.
        project = self.project_for(request.user, slug)
        job_id = int(id)
        job = (Job.objects.select_related("created_by").filter(project=project, kind=self.kind, pk=job_id)
               .first() if 1 <= job_id <= MAX_ID else None)
        if job is None:
            raise NotFound(f"{project.slug!r} has no {self.noun} {id}")
        NoBodySerializer(data=request.data).is_valid(raise_exception=True)
        try:
            self.cancel(job, request.user)
        except jobs.CancelRefused as refusal:
            return Response({"detail": str(refusal)}, status=status.HTTP_409_CONFLICT)
        return Response(self.payload(job))


def cancel_schema(view: type[CancelJobView]) -> type[CancelJobView]:
    """Document a cancel view's POST in its own words: its docstring, its job id, its answer, who may cancel."""
    job_id = OpenApiParameter("id", integer(1, MAX_ID), OpenApiParameter.PATH, description=view.job_id_help)
    for_admins = OpenApiResponse(ErrorSerializer, description=f"Only the project's admins cancel {view.noun}s.")
    schema = extend_schema(
        description=inspect.cleandoc(view.__doc__ or ""),
        parameters=[job_id],
        request=NO_BODY,
        responses={200: view.answer, **view.refusals, 403: for_admins, 409: ALREADY_ENDED},
    )
    return extend_schema_view(post=schema)(view)


class CancelledJobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["queued", "running", "done", "failed"])
    done = serializers.IntegerField(help_text="How much of `total` the job did: texts for an embedding job, "
                                              "samples for an export.")
    total = serializers.IntegerField()
    error = serializers.CharField(allow_blank=True, help_text="Why it failed; \"Cancelled by <user> at <time>.\" "
                                  "once cancelled.")
    created_by = serializers.CharField(allow_null=True, help_text="Who started the job; null for the command line "
                                       "and for a similarity request's re-embedding.")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    cancelled_by = serializers.CharField(allow_null=True, help_text="Who cancelled it; null unless cancelled.")


@cancel_schema
class CancelEmbeddingJobView(CancelJobView):
    """Cancel a span project's queued or running embedding job (admins): it is marked failed, "Cancelled by <you>
    at <time>", and stops after the chunk in hand even if a worker runs it. The texts it embedded keep their
    vectors; `manage.py embed --project SLUG` embeds the rest. Takes no fields."""

    kind = Job.Kind.EMBED
    noun = "embedding job"
    job_id_help = "The embedding job's id (an import's `embedding_job`; the project page names it)."
    answer = CancelledJobSerializer
    cancel = staticmethod(reembedding.cancel_embedding_job)
    payload = staticmethod(progress_job_payload)


@cancel_schema
class CancelExportJobView(CancelJobView):
    """Cancel a span project's queued or running export (admins): it is marked failed, "Cancelled by <you> at
    <time>", and writes no file even if a worker picks it up later. The same export can be started again. Takes
    no fields."""

    kind = Job.Kind.EXPORT
    noun = "export job"
    job_id_help = "The export job's id (the project page lists the exports)."
    answer = CancelledJobSerializer
    cancel = staticmethod(export.cancel_export_job)
    payload = staticmethod(progress_job_payload)
