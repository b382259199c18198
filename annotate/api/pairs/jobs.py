"""A pairs project's round and perturbation jobs (admins): cancel one that no worker runs, so a new one can start.

A round job stuck in "queued" (no worker) or "running" (its worker died)
blocks every later round of the project; the round job's page and the wizard
offer the same cancel, through the same service
(``annotate.services.pairs.rounds.cancel_round_job``). A stuck perturbation job
refuses every new perturbation; the project page's Perturbation section offers
its cancel (``annotate.services.pairs.perturb.cancel_perturbation_job``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from annotate.api.jobs import CancelJobView, cancel_schema, job_fields, progress_job_payload
from annotate.api.pairs.lookups import Role, pairs_project_for
from annotate.api.pairs.serializers import NOT_A_PAIRS_PROJECT, RoundJobSerializer
from annotate.models import Job, Project
from annotate.services.pairs import perturb, rounds


def round_job_payload(job: Job) -> dict[str, Any]:
    return {**job_fields(job), "round": job.options.get("number")}


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


perturbation_job_payload = progress_job_payload


class PairsCancelJobView(CancelJobView):
    """A pairs project's cancel: a member's span project is the 400 of every pairs endpoint."""

    refusals: ClassVar[dict[int, OpenApiResponse]] = {400: NOT_A_PAIRS_PROJECT}

    def project_for(self, user: Any, slug: str) -> Project:
        project, _ = pairs_project_for(user, slug, roles=(Role.ADMIN,))
        return project


@cancel_schema
class CancelRoundJobView(PairsCancelJobView):
    """Cancel a queued or running round job (admins): it is marked failed, "Cancelled by <you> at <time>", draws
    no round even if a worker picks it up later, and a new round can be started. Takes no fields."""

    kind = Job.Kind.PAIR_ROUND
    noun = "round job"
    job_id_help = "The round job's id (the wizard's busy notice and the job's page name it)."
    answer = RoundJobSerializer
    cancel = staticmethod(rounds.cancel_round_job)
    payload = staticmethod(round_job_payload)


@cancel_schema
class CancelPerturbationJobView(PairsCancelJobView):
    """Cancel a queued or running perturbation job (admins): it is marked failed, "Cancelled by <you> at
    <time>", stops before its next original even if a worker runs it, and a new perturbation can be started
    for the originals left. Those it perturbed keep their texts and items. Takes no fields."""

    kind = Job.Kind.PERTURB
    noun = "perturbation job"
    job_id_help = "The perturbation job's id (the project page names it)."
    answer = PerturbationJobSerializer
    cancel = staticmethod(perturb.cancel_perturbation_job)
    payload = staticmethod(perturbation_job_payload)
