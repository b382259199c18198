"""A pairs project's round and perturbation jobs (admins): cancel one that no worker runs, so a new one can start.

A round job stuck in "queued" (no worker) or "running" (its worker died)
blocks every later round of the project; the round job's page and the wizard
offer the same cancel, through the same service
(``annotate.services.pairs.rounds.cancel_round_job``). A stuck perturbation job
refuses every new perturbation; the project page's Perturbation section offers
its cancel (``annotate.services.pairs.perturb.cancel_perturbation_job``).
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

from annotate.api.pairs.lookups import Role, pairs_project_for
from annotate.api.pairs.serializers import NOT_A_PAIRS_PROJECT, RoundJobSerializer
from annotate.api.schema import integer
from annotate.api.serializers import MAX_ID, ErrorSerializer
from annotate.api.validation import NO_BODY, NoBodySerializer
from annotate.models import Job
from annotate.services import jobs
from annotate.services.pairs import perturb, rounds

ALREADY_ENDED = OpenApiResponse(ErrorSerializer, description="The job has already ended (done, failed or cancelled "
                                "before); detail says how. Nothing was changed.")


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


class CancelJobView(APIView):
    """Cancel a pairs project's queued or running job of one kind (admins); a subclass names the kind.

    Both cancels look the job up in the project, refuse an ended one with 409 and answer the job as it now is:
    only the kind, its name in messages, the service that cancels it and the answer's fields differ, and those
    are the subclass's attributes. Each subclass gets its schema from ``_cancel_schema``.
    """

    kind: ClassVar[str]  # a Job.Kind
    noun: ClassVar[str]  # how the 404 and the schema name the job: "round job"
    job_id_help: ClassVar[str]  # the schema's description of the path's id: where the caller finds it
    answer: ClassVar[type[serializers.Serializer]]  # the 200's schema; ``payload`` builds it
    # staticmethod(...) on the subclass: the service that cancels the job, raising jobs.CancelRefused once it ended.
    cancel: ClassVar[Callable[[Job, Any], Job]]
    payload: ClassVar[Callable[[Job], dict[str, Any]]]

    def post(self, request: Request, slug: str, id: str) -> Response:
        # The schema's description is the subclass's docstring (_cancel_schema), not this method's.
        project, _ = pairs_project_for(request.user, slug, roles=(Role.ADMIN,))
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


def _cancel_schema(view: type[CancelJobView]) -> type[CancelJobView]:
    """Document a cancel view's POST in its own words: its docstring, its job id, its answer, who may cancel."""
    job_id = OpenApiParameter("id", integer(1, MAX_ID), OpenApiParameter.PATH, description=view.job_id_help)
    for_admins = OpenApiResponse(ErrorSerializer, description=f"Only the project's admins cancel {view.noun}s.")
    schema = extend_schema(
        description=inspect.cleandoc(view.__doc__ or ""),
        parameters=[job_id],
        request=NO_BODY,
        responses={200: view.answer, 400: NOT_A_PAIRS_PROJECT, 403: for_admins, 409: ALREADY_ENDED},
    )
    return extend_schema_view(post=schema)(view)


@_cancel_schema
class CancelRoundJobView(CancelJobView):
    """Cancel a queued or running round job (admins): it is marked failed, "Cancelled by <you> at <time>", draws
    no round even if a worker picks it up later, and a new round can be started. Takes no fields."""

    kind = Job.Kind.PAIR_ROUND
    noun = "round job"
    job_id_help = "The round job's id (the wizard's busy notice and the job's page name it)."
    answer = RoundJobSerializer
    cancel = staticmethod(rounds.cancel_round_job)
    payload = staticmethod(round_job_payload)


@_cancel_schema
class CancelPerturbationJobView(CancelJobView):
    """Cancel a queued or running perturbation job (admins): it is marked failed, "Cancelled by <you> at
    <time>", stops before its next original even if a worker runs it, and a new perturbation can be started
    for the originals left. Those it perturbed keep their texts and items. Takes no fields."""

    kind = Job.Kind.PERTURB
    noun = "perturbation job"
    job_id_help = "The perturbation job's id (the project page names it)."
    answer = PerturbationJobSerializer
    cancel = staticmethod(perturb.cancel_perturbation_job)
    payload = staticmethod(perturbation_job_payload)
