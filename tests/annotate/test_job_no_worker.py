"""A span project's embedding and export jobs, judge runs and synthetic sets that no worker picks up: after a minute
queued the page says that no worker may be running and how to start one (the notice the pairs round and
perturbation jobs had alone), and a project admin may cancel a queued export or embedding job.

Before, these stayed "Queued" for ever with no hint and no way out. Jobs stay queued here: the tests run in a
transaction, so the on-commit send never fires; "queued three minutes ago" is a created_at in the past.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from annotate.models import Batch, Job, Membership, Project
from annotate.services import embedding, export
from annotate.services.export import jobs as export_jobs
from judging.models import JudgeRun, SyntheticSet
from judging.services.judges.edit import create_judge
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
NOTICE = re.compile(r'<p class="notice warn" data-role="no-worker">(.*?)</p>', re.S)
CANCELLED = re.compile(r"Cancelled by adam at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.")


def member(project: Project, name: str, role: str) -> Any:
    user = make_user(name)
    Membership.objects.create(project=project, user=user, role=role)
    return user


def queued_export(project: Project, user: Any, *, minutes_ago: int = 0) -> Job:
    job = export.start_export(project, export.ExportOptions(format="jsonl", round=1), user)
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(minutes=minutes_ago))
    job.refresh_from_db()
    return job


def job_line(page: str, job: Job) -> str:
    """The job's line on a page: its progress element, up to the end of that element."""
    found = re.search(rf'<div class="job" id="job-{job.pk}".*?</div>', page, re.S)
    assert found, f"job {job.pk}'s line is not on the page"
    return found.group(0)


def notice_in(html: str) -> str | None:
    found = NOTICE.search(html)
    return " ".join(re.sub(r"<[^>]+>", "", found.group(1)).split()) if found else None


def cancel_url(job: Job) -> str:
    return f"/projects/{job.project.slug}/jobs/{job.pk}/cancel/"


def test_an_export_queued_over_a_minute_says_no_worker_may_be_running_and_admins_get_its_cancel(
    batch: Batch, admin_user: Any
) -> None:
    project = batch.project
    fresh = queued_export(project, admin_user)
    page = login(admin_user).get("/projects/demo/").content.decode()
    line = job_line(page, fresh)
    assert notice_in(line) is None  # just queued: a worker may not have had time yet
    assert f'hx-post="{cancel_url(fresh)}"' in line and 'data-role="cancel-job"' in line  # the cancel is there

    stuck = queued_export(project, admin_user, minutes_ago=3)
    admin = login(admin_user)
    for html in (job_line(admin.get("/projects/demo/").content.decode(), stuck),
                 admin.get(f"/projects/demo/jobs/{stuck.pk}/", **HTMX).content.decode()):  # the line's own poll
        assert notice_in(html) == (
            "No worker has taken it for 3 minutes: no worker may be running, or its pool may be stuck (README, "
            "Deploying for real, step 6). A worker takes a queued job within seconds. make run starts a worker beside "
            "the web server; on a server start one with .venv/bin/celery -A config worker --loglevel=info "
            "--concurrency=2, or, if one is running, kill it whole and start it again: a starting worker queues again "
            "what its predecessor took and left. Or cancel the job.")
        assert f'hx-post="{cancel_url(stuck)}"' in html and "It writes no file; the export can be started" in html

    # An auditor sees the exports and the notice, but cancels nothing: no cancel, and the notice offers none.
    auditor = member(project, "audra", Membership.Role.AUDITOR)
    line = job_line(login(auditor).get("/projects/demo/").content.decode(), stuck)
    assert notice_in(line).endswith("took and left.") and 'data-role="cancel-job"' not in line


def test_an_embedding_job_queued_over_a_minute_says_so_on_the_project_page_and_its_poll(
    batch: Batch, admin_user: Any
) -> None:
    job = embedding.queue_embedding(batch.project)
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(minutes=2))
    admin = login(admin_user)
    for html in (job_line(admin.get("/projects/demo/").content.decode(), job),
                 admin.get("/projects/demo/", HTTP_HX_TARGET="progress", **HTMX).content.decode(),
                 admin.get(f"/projects/demo/jobs/{job.pk}/", **HTMX).content.decode()):
        assert notice_in(html).startswith("No worker has taken it for 2 minutes: no worker may be running, or its "
                                          "pool may be stuck (README, Deploying for real, step 6).")
        assert notice_in(html).endswith("cancel the job.")
        assert f'hx-post="{cancel_url(job)}"' in html
        assert "manage.py embed --project demo</code> does the rest" in html
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING)  # a worker took it: no notice, still its cancel
    running = admin.get(f"/projects/demo/jobs/{job.pk}/", **HTMX).content.decode()
    assert notice_in(running) is None and 'data-role="cancel-job"' in running


def test_cancelling_a_queued_export_ends_it_and_a_late_worker_writes_no_file(
    batch: Batch, admin_user: Any, settings: Any, tmp_path: Any
) -> None:
    settings.DATA_DIR = tmp_path
    job = queued_export(batch.project, admin_user, minutes_ago=3)
    admin = login(admin_user)
    answer = admin.post(cancel_url(job))
    assert answer.status_code == 302 and answer["Location"] == "/projects/demo/#exports"
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and CANCELLED.fullmatch(job.error) and job.cancelled_by == "adam"
    page = admin.get("/projects/demo/").content.decode()
    assert (f"Job {job.pk} (export) is cancelled: it writes no file, even if a worker picks it up later; the export "
            "can be started again.") in page
    line = job_line(page, job)
    assert "Cancelled" in line and notice_in(line) is None and 'data-role="cancel-job"' not in line

    # The worker that picks it up later leaves it cancelled and writes nothing.
    assert export.run_export_job(job.pk).error == job.error
    assert not (tmp_path / "exports" / str(job.pk)).exists()

    again = admin.post(cancel_url(job), follow=True).content.decode()
    assert re.search(rf"Not cancelled: Job {job.pk} was already cancelled by adam at [\d:\- ]+UTC; nothing was "
                     "changed.", again)


def test_an_export_cancelled_while_its_file_is_written_stops_and_keeps_no_file(
    batch: Batch, admin_user: Any, settings: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.DATA_DIR = tmp_path
    job = queued_export(batch.project, admin_user)
    chunks = []

    def write(project: Project, out: Any, options: Any, progress: Any) -> list[Any]:
        out.write_text("first chunk\n")
        progress(1)
        chunks.append(1)
        export.cancel_export_job(Job.objects.get(pk=job.pk), admin_user)  # the admin cancels meanwhile
        progress(2)  # the next chunk finds it cancelled and stops the writing here
        chunks.append(2)
        return [out]

    monkeypatch.setattr(export_jobs, "export_to_path", write)
    ended = export.run_export_job(job.pk)
    assert chunks == [1]
    assert ended.status == Job.Status.FAILED and CANCELLED.fullmatch(ended.error) and not ended.result_path
    assert not (tmp_path / "exports" / str(job.pk)).exists()


def test_cancelling_a_queued_embedding_job_keeps_it_resumable(batch: Batch, admin_user: Any) -> None:
    job = embedding.queue_embedding(batch.project)
    admin = login(admin_user)
    answer = admin.post(cancel_url(job), **HTMX)  # the line's form: htmx reloads the page
    assert answer.status_code == 200 and answer["HX-Refresh"] == "true"
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and CANCELLED.fullmatch(job.error)
    assert embedding.run_embedding_job(job.pk).status == Job.Status.FAILED  # a late worker does nothing
    page = admin.get("/projects/demo/").content.decode()
    assert (f"Job {job.pk} (sentence splitting and embedding) is cancelled: the texts it embedded keep their vectors; "
            "`manage.py embed --project demo` embeds the rest.") in page


@pytest.mark.parametrize(("role", "status"), [
    (Membership.Role.AUDITOR, 403), (Membership.Role.CURATOR, 403), (Membership.Role.ANNOTATOR, 403), (None, 404),
])
def test_only_the_projects_admins_cancel_a_job(batch: Batch, admin_user: Any, role: str | None, status: int) -> None:
    export_job = queued_export(batch.project, admin_user, minutes_ago=3)
    embed_job = embedding.queue_embedding(batch.project)
    user = member(batch.project, "someone", role) if role else make_user("stranger")
    for job in (export_job, embed_job):
        assert login(user).post(cancel_url(job)).status_code == status
        kind = "export" if job.kind == Job.Kind.EXPORT else "embedding"
        assert login(user).post(f"/api/projects/demo/{kind}-jobs/{job.pk}/cancel/").status_code == status
        job.refresh_from_db()
        assert job.status == Job.Status.QUEUED


def test_the_cancel_url_is_post_only_and_names_only_embedding_and_export_jobs(
    batch: Batch, admin_user: Any
) -> None:
    admin = login(admin_user)
    job = queued_export(batch.project, admin_user)
    assert admin.get(cancel_url(job)).status_code == 405
    other = Job.objects.create(project=batch.project, kind=Job.Kind.PAIR_VECTORS)
    assert admin.post(cancel_url(other)).status_code == 404
    elsewhere = Project.objects.create(name="Other", slug="other")
    Membership.objects.create(project=elsewhere, user=admin_user, role=Membership.Role.ADMIN)
    assert admin.post(f"/projects/other/jobs/{job.pk}/cancel/").status_code == 404  # another project's job


def test_the_api_cancels_an_export_once_and_then_says_how_it_ended(batch: Batch, admin_user: Any) -> None:
    job = queued_export(batch.project, admin_user)
    admin = login(admin_user)
    url = f"/api/projects/demo/export-jobs/{job.pk}/cancel/"
    answer = admin.post(url)
    assert answer.status_code == 200
    body = answer.json()
    assert (body["id"], body["status"], body["cancelled_by"], body["created_by"]) == (job.pk, "failed", "adam", "adam")
    assert CANCELLED.fullmatch(body["error"]) and body["finished_at"] and (body["done"], body["total"]) == (0, 3)
    again = admin.post(url)
    assert again.status_code == 409 and again.json()["detail"].startswith(f"Job {job.pk} was already cancelled by adam")
    assert admin.post(f"/api/projects/demo/embedding-jobs/{job.pk}/cancel/").status_code == 404  # not an embedding


def test_the_schema_describes_the_span_projects_cancels(admin_user: Any) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for kind in ("embedding", "export"):
        operation = document["paths"][f"/api/projects/{{slug}}/{kind}-jobs/{{id}}/cancel/"]["post"]
        assert {"200", "403", "404", "409"} <= set(operation["responses"])
        assert "already ended" in operation["responses"]["409"]["description"]
        assert "pairs project" not in operation["responses"]["400"]["description"]  # the pairs cancels' 400 only


def test_a_judge_run_and_a_synthetic_set_queued_over_a_minute_say_no_worker_may_be_running(
    batch: Batch, admin_user: Any
) -> None:
    project = batch.project
    judge = create_judge(project, name="rubric", kind="rubric", base_url="http://127.0.0.1:9/v1", model="m")
    run = JudgeRun.objects.create(project=project, judge=judge, total=3)
    synthetic = SyntheticSet.objects.create(project=project, name="S1", total=3)
    admin = login(admin_user)
    pages = [f"/projects/demo/judges/runs/{run.pk}/", "/projects/demo/judges/",
             f"/projects/demo/synthetic/{synthetic.pk}/", "/projects/demo/synthetic/"]
    for url in pages:
        assert notice_in(admin.get(url).content.decode()) is None, url  # just queued
    long_ago = timezone.now() - timedelta(minutes=5)
    JudgeRun.objects.filter(pk=run.pk).update(created_at=long_ago)
    SyntheticSet.objects.filter(pk=synthetic.pk).update(created_at=long_ago)
    polls = [admin.get(f"/projects/demo/judges/runs/{run.pk}/", **HTMX),
             admin.get(f"/projects/demo/synthetic/{synthetic.pk}/", **HTMX)]
    htmls = [admin.get(url).content.decode() for url in pages] + [poll.content.decode() for poll in polls]
    for html in htmls:
        # The run's and the set's own Cancel are beside the notice (tests/judging/test_run_cancel.py,
        # tests/judging/test_synthetic_cancel.py).
        assert notice_in(html) is not None and notice_in(html).endswith("Or cancel the job.")
        assert notice_in(html).startswith("No worker has taken it for 5 minutes: no worker may be running, or its "
                                          "pool may be stuck")
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING, started_at=timezone.now())
    assert notice_in(admin.get(f"/projects/demo/judges/runs/{run.pk}/", **HTMX).content.decode()) is None
