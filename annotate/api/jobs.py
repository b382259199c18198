"""A project's background job through the API: what a script polls after an import queued one (``embedding_job``),
an export, a perturbation or a pair round.

The roles are the project page's job lines' (access.get_job_for_user): a span project shows its embedding jobs
to admins and its exports to admins and auditors, a pairs project its jobs to admins, auditors and curators;
another member gets 403, an outsider 404.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate import access
from annotate.api.schema import id_in_path
from annotate.api.serializers import ErrorSerializer
from annotate.models import Job


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
