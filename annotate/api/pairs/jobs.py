"""A pairs project's round and perturbation jobs (admins): cancel one that no worker runs, so a new one can start.

A round job stuck in "queued" (no worker) or "running" (its worker died)
blocks every later round of the project; the round job's page and the wizard
offer the same cancel, through the same service
(``annotate.services.pairs.rounds.cancel_round_job``). A stuck perturbation job
refuses every new perturbation; the project page's Perturbation section offers
its cancel (``annotate.services.pairs.perturb.cancel_perturbation_job``).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.api.pairs.lookups import Role, pairs_project_for
from annotate.api.pairs.serializers import NOT_A_PAIRS_PROJECT, RoundJobSerializer
from annotate.api.schema import integer
from annotate.api.serializers import MAX_ID, NO_BODY, ErrorSerializer, NoBodySerializer
from annotate.models import Job
from annotate.services import jobs
from annotate.services.pairs import perturb, rounds

JOB_ID = OpenApiParameter("id", integer(1, MAX_ID), OpenApiParameter.PATH,
                          description="The round job's id (the wizard's busy notice and the job's page name it).")
FOR_ADMINS = OpenApiResponse(ErrorSerializer, description="Only the project's admins cancel round jobs.")


def _job_fields(job: Job) -> dict[str, Any]:
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


def round_job_payload(job: Job) -> dict[str, Any]:
    return {**_job_fields(job), "round": job.options.get("number")}


class CancelRoundJobView(APIView):
    @extend_schema(
        parameters=[JOB_ID],
        request=NO_BODY,
        responses={
            200: RoundJobSerializer,
            400: NOT_A_PAIRS_PROJECT,
            403: FOR_ADMINS,
            409: OpenApiResponse(ErrorSerializer, description="The job has already ended (done, failed or "
                                 "cancelled before); detail says how. Nothing was changed."),
        },
    )
    def post(self, request: Request, slug: str, id: str) -> Response:
        """Cancel a queued or running round job (admins): it is marked failed, "Cancelled by <you> at <time>", draws
        no round even if a worker picks it up later, and a new round can be started. Takes no fields."""
        project, _ = pairs_project_for(request.user, slug, roles=(Role.ADMIN,))
        job_id = int(id)
        job = (Job.objects.select_related("created_by").filter(project=project, kind=Job.Kind.PAIR_ROUND, pk=job_id)
               .first() if 1 <= job_id <= MAX_ID else None)
        if job is None:
            raise NotFound(f"{project.slug!r} has no round job {id}")
        NoBodySerializer(data=request.data).is_valid(raise_exception=True)
        try:
            rounds.cancel_round_job(job, request.user)
        except rounds.CancelRefused as refusal:
            return Response({"detail": str(refusal)}, status=status.HTTP_409_CONFLICT)
        return Response(round_job_payload(job))


PERTURBATION_JOB_ID = OpenApiParameter("id", integer(1, MAX_ID), OpenApiParameter.PATH,
                                       description="The perturbation job's id (the project page names it).")


class PerturbationJobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["queued", "running", "done", "failed"])
    done = serializers.IntegerField(help_text="Originals perturbed (or found with nothing to replace) by the job.")
    total = serializers.IntegerField(help_text="Originals the job was started for.")
    error = serializers.CharField(allow_blank=True, help_text="Why it failed; \"Cancelled by <user> at <time>.\" "
                                  "once cancelled.")
    created_by = serializers.CharField(allow_null=True, help_text="Who started the job; null for the command line.")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    cancelled_by = serializers.CharField(allow_null=True, help_text="Who cancelled it; null unless cancelled.")


def perturbation_job_payload(job: Job) -> dict[str, Any]:
    return {**_job_fields(job), "done": job.done, "total": job.total}


class CancelPerturbationJobView(APIView):
    @extend_schema(
        parameters=[PERTURBATION_JOB_ID],
        request=NO_BODY,
        responses={
            200: PerturbationJobSerializer,
            400: NOT_A_PAIRS_PROJECT,
            403: OpenApiResponse(ErrorSerializer, description="Only the project's admins cancel perturbation jobs."),
            409: OpenApiResponse(ErrorSerializer, description="The job has already ended (done, failed or "
                                 "cancelled before); detail says how. Nothing was changed."),
        },
    )
    def post(self, request: Request, slug: str, id: str) -> Response:
        """Cancel a queued or running perturbation job (admins): it is marked failed, "Cancelled by <you> at
        <time>", stops before its next original even if a worker runs it, and a new perturbation can be started
        for the originals left. Those it perturbed keep their texts and items. Takes no fields."""
        project, _ = pairs_project_for(request.user, slug, roles=(Role.ADMIN,))
        job_id = int(id)
        job = (Job.objects.select_related("created_by").filter(project=project, kind=Job.Kind.PERTURB, pk=job_id)
               .first() if 1 <= job_id <= MAX_ID else None)
        if job is None:
            raise NotFound(f"{project.slug!r} has no perturbation job {id}")
        NoBodySerializer(data=request.data).is_valid(raise_exception=True)
        try:
            perturb.cancel_perturbation_job(job, request.user)
        except jobs.CancelRefused as refusal:
            return Response({"detail": str(refusal)}, status=status.HTTP_409_CONFLICT)
        return Response(perturbation_job_payload(job))
