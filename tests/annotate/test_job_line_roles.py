"""A job's line (``/projects/<slug>/jobs/<id>/``, the progress the project pages poll) follows the API's job rule
(access.get_job_for_user): a span project shows its embedding jobs to admins and its exports to admins and auditors,
a pairs project its jobs to admins, auditors and curators; another member gets 403 and no progress, as from the API;
an outsider 404."""

from __future__ import annotations

import re
from typing import Any

import pytest

from annotate.models import Job, Membership, Project
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
ADMIN, AUDITOR, CURATOR, ANNOTATOR = (Membership.Role.ADMIN, Membership.Role.AUDITOR, Membership.Role.CURATOR,
                                      Membership.Role.ANNOTATOR)


def member(project: Project, role: str) -> Any:
    user = make_user(f"{project.slug}-{role}")
    Membership.objects.create(project=project, user=user, role=role)
    return user


def line(job: Job) -> str:
    return f"/projects/{job.project.slug}/jobs/{job.pk}/"


def api(job: Job) -> str:
    return f"/api/projects/{job.project.slug}/jobs/{job.pk}/"


def assert_line_answers(client: Any, job: Job, status: int) -> None:
    """The page and its htmx poll answer ``status``, as the API does; only a 200 shows the progress."""
    for answer in (client.get(line(job)), client.get(line(job), **HTMX)):
        assert answer.status_code == status
        assert ('data-job-status="running"' in answer.content.decode()) is (status == 200)
        assert ("7 of 10" in answer.content.decode()) is (status == 200)
    assert client.get(api(job)).status_code == status


@pytest.mark.parametrize(("role", "embed", "export"), [
    (ADMIN, 200, 200),
    (AUDITOR, 403, 200),
    (CURATOR, 403, 403),
    (ANNOTATOR, 403, 403),
])
def test_a_span_projects_job_line_goes_to_the_roles_its_page_shows_that_kind_to(
    project: Project, role: str, embed: int, export: int
) -> None:
    client = login(member(project, role))
    embedding = Job.objects.create(project=project, kind=Job.Kind.EMBED, status=Job.Status.RUNNING, done=7, total=10)
    exporting = Job.objects.create(project=project, kind=Job.Kind.EXPORT, status=Job.Status.RUNNING, done=7,
                                   total=10)
    assert_line_answers(client, embedding, embed)
    assert_line_answers(client, exporting, export)


def test_an_annotator_of_the_batch_is_refused_the_embedding_jobs_progress(project: Project, alice: Any) -> None:
    job = Job.objects.create(project=project, kind=Job.Kind.EMBED, status=Job.Status.RUNNING, done=7, total=10)
    answer = login(alice).get(line(job))
    assert answer.status_code == 403 and "7 of 10" not in answer.content.decode()


@pytest.mark.parametrize(("role", "status"), [(ADMIN, 200), (AUDITOR, 200), (CURATOR, 200), (ANNOTATOR, 403)])
def test_a_pairs_projects_job_line_goes_to_those_who_see_its_figures(
    two_item_pairs: Project, role: str, status: int
) -> None:
    client = login(member(two_item_pairs, role))
    for kind in (Job.Kind.PERTURB, Job.Kind.PAIR_VECTORS, Job.Kind.PAIR_ROUND):
        job = Job.objects.create(project=two_item_pairs, kind=kind, status=Job.Status.RUNNING, done=7, total=10)
        assert_line_answers(client, job, status)


def test_outsiders_and_another_projects_slug_get_404(project: Project, admin_user: Any, charlie: Any) -> None:
    job = Job.objects.create(project=project, kind=Job.Kind.EMBED, status=Job.Status.RUNNING, done=7, total=10)
    elsewhere = Project.objects.create(name="Elsewhere", slug="elsewhere")
    Membership.objects.create(project=elsewhere, user=admin_user, role=ADMIN)
    assert login(charlie).get(line(job)).status_code == 404
    assert login(admin_user).get(f"/projects/elsewhere/jobs/{job.pk}/").status_code == 404
    assert login(admin_user).post(line(job)).status_code == 405


def test_the_admins_line_still_polls_and_offers_its_cancel(project: Project, admin_user: Any) -> None:
    job = Job.objects.create(project=project, kind=Job.Kind.EMBED, status=Job.Status.RUNNING, done=7, total=10)
    html = login(admin_user).get(line(job), **HTMX).content.decode()
    assert f'hx-get="/projects/demo/jobs/{job.pk}/"' in html and 'data-role="cancel-job"' in html


def polled_lines(html: str) -> list[str]:
    return re.findall(r'hx-get="(/projects/[^"]+/jobs/\d+/)"', html)


@pytest.mark.parametrize("role", [ADMIN, AUDITOR])
def test_the_span_project_page_polls_only_lines_its_reader_may_poll(project: Project, role: str) -> None:
    client = login(member(project, role))
    Job.objects.create(project=project, kind=Job.Kind.EMBED, status=Job.Status.RUNNING, done=7, total=10)
    Job.objects.create(project=project, kind=Job.Kind.EXPORT, status=Job.Status.RUNNING, done=7, total=10)
    urls = polled_lines(client.get("/projects/demo/").content.decode())
    assert len(urls) == (2 if role == ADMIN else 1)  # the auditor's page shows the export alone
    for url in urls:
        assert client.get(url, **HTMX).status_code == 200


@pytest.mark.parametrize("role", [ADMIN, AUDITOR, CURATOR])
def test_the_pairs_project_page_polls_lines_its_reviewers_may_poll(two_item_pairs: Project, role: str) -> None:
    client = login(member(two_item_pairs, role))
    Job.objects.create(project=two_item_pairs, kind=Job.Kind.PAIR_ROUND, status=Job.Status.RUNNING, done=7, total=10)
    urls = polled_lines(client.get(f"/projects/{two_item_pairs.slug}/").content.decode())
    assert urls
    for url in urls:
        assert client.get(url, **HTMX).status_code == 200
