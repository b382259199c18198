"""A project's jobs through the API: the embedding job an import names can be polled, with the project page's rule
for who sees which job lines (span projects: embedding for admins, exports for admins and auditors; pairs projects:
their jobs for admins, auditors and curators); other members 403, outsiders and other projects' jobs 404."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from annotate.models import Batch, Job, Membership, Project
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db

SAMPLE = {"passage_id": "p1", "source": "One. Two.", "summary": "One.", "generator": "g"}


def job_url(job: Job, slug: str | None = None) -> str:
    return f"/api/projects/{slug or job.project.slug}/jobs/{job.pk}/"


def member(project: Project, username: str, role: str) -> Any:
    user = make_user(username)
    Membership.objects.create(project=project, user=user, role=role)
    return user


def test_the_embedding_job_an_import_names_can_be_polled_to_its_end(project: Project, admin_user: Any) -> None:
    admin = login(admin_user)
    upload = SimpleUploadedFile("samples.jsonl", json.dumps(SAMPLE).encode(), content_type="application/octet-stream")
    imported = admin.post("/api/projects/demo/imports/", {"file": [upload], "format": "jsonl"})
    assert imported.status_code == 201
    job = Job.objects.get(pk=imported.json()["embedding_job"])
    first = admin.get(job_url(job)).json()
    assert first == {"id": job.pk, "kind": "embed", "status": job.status, "done": job.done, "total": job.total,
                     "error": "", "created_at": first["created_at"], "finished_at": None, "resumed": 0,
                     "resumed_at": None}
    finished = timezone.now()
    Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE, done=2, total=2, finished_at=finished)
    last = admin.get(job_url(job)).json()
    assert (last["status"], last["done"], last["total"]) == ("done", 2, 2) and last["finished_at"] is not None


def test_a_failed_job_says_why(project: Project, admin_user: Any) -> None:
    job = Job.objects.create(project=project, kind=Job.Kind.EMBED, status=Job.Status.FAILED, error="the model is gone")
    answer = login(admin_user).get(job_url(job)).json()
    assert (answer["status"], answer["error"]) == ("failed", "the model is gone")


@pytest.mark.parametrize(("role", "embed", "export"), [
    (Membership.Role.ADMIN, 200, 200),
    (Membership.Role.AUDITOR, 403, 200),
    (Membership.Role.CURATOR, 403, 403),
    (Membership.Role.ANNOTATOR, 403, 403),
])
def test_a_span_project_shows_each_kind_of_job_to_the_roles_its_page_does(project: Project, role: str, embed: int,
                                                                          export: int) -> None:
    caller = login(member(project, "m-caller", role))
    embedding = Job.objects.create(project=project, kind=Job.Kind.EMBED)
    exporting = Job.objects.create(project=project, kind=Job.Kind.EXPORT)
    assert caller.get(job_url(embedding)).status_code == embed
    assert caller.get(job_url(exporting)).status_code == export


def test_a_refusal_names_who_sees_the_job(project: Project) -> None:
    caller = login(member(project, "m-auditor", Membership.Role.AUDITOR))
    embedding = Job.objects.create(project=project, kind=Job.Kind.EMBED)
    answer = caller.get(job_url(embedding))
    assert answer.json() == {"detail": "The project page shows its sentence splitting and embedding jobs to its "
                                       "admins only"}


@pytest.mark.parametrize(("role", "status"), [
    (Membership.Role.ADMIN, 200), (Membership.Role.AUDITOR, 200), (Membership.Role.CURATOR, 200),
    (Membership.Role.ANNOTATOR, 403),
])
def test_a_pairs_projects_jobs_go_to_those_who_see_its_figures(two_item_pairs: Project, role: str, status: int) -> None:
    caller = login(member(two_item_pairs, "m-caller", role))
    perturbing = Job.objects.create(project=two_item_pairs, kind=Job.Kind.PERTURB, total=4, done=1)
    answer = caller.get(job_url(perturbing))
    assert answer.status_code == status
    if status == 200:
        assert (answer.json()["kind"], answer.json()["done"], answer.json()["total"]) == ("perturb", 1, 4)


def test_outsiders_another_projects_job_and_the_anonymous_are_refused(project: Project, batch: Batch,
                                                                      admin_user: Any, charlie: Any) -> None:
    job = Job.objects.create(project=project, kind=Job.Kind.EMBED)
    elsewhere = Project.objects.create(name="Elsewhere", slug="elsewhere")
    Membership.objects.create(project=elsewhere, user=admin_user, role=Membership.Role.ADMIN)
    assert login(charlie).get(job_url(job)).status_code == 404
    assert login(admin_user).get(job_url(job, "elsewhere")).status_code == 404  # their job, another project's slug
    assert login(admin_user).get(f"/api/projects/demo/jobs/{job.pk + 1000}/").status_code == 404
    assert Client().get(job_url(job)).status_code == 401
