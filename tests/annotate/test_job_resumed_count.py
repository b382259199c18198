"""A job a starting worker queues again after its worker stopped counts it, as a judge run counts its resumptions
(JudgeRun.resumed): ``options["resumed"]`` and when last (``options["resumed_at"]``), shown on its line on the project
page ("Resumed 2 times after its worker stopped") and in the jobs API (``resumed``, ``resumed_at``).

Before, annotate.services.jobs.recovery queued the job again and the row kept no trace of it. Real kombu messages in
the test's own queue folder stand for the broker (tests/annotate/job_queue.py); the round job's count is in
tests/pairs/test_round_job_resumed_count.py.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from annotate import embedder, tasks
from annotate.models import Batch, Job, Passage, Project, Sample
from annotate.services import embedding, export, jobs
from tests.annotate.job_queue import (
    WorkerKilled,
    deliver_all,
    job_queue_fixture,  # noqa: F401  (the queue fixture)
    kill_on_call,
    queued_again_at_worker_start,
    run_until_killed,
    worker_start,
)
from tests.conftest import login

pytestmark = pytest.mark.django_db

RESUMED_LINE = re.compile(r'<span class="small" data-role="job-resumed">(.*?)</span>', re.S)


def texts_project(admin_user: Any) -> Project:
    """A passage and four summaries, embedded a text at a time (LONG_TEXT_CHARS is set low)."""
    project = Project.objects.create(name="Resumed", slug="resumed")
    project.memberships.create(user=admin_user, role="admin")
    batch = Batch.objects.create(project=project, name="b1")
    passage = Passage.objects.create(project=project, external_id="p1", text="The bridge reopened. It is old.")
    for position in range(4):
        Sample.objects.create(project=project, passage=passage, batch=batch, position=position,
                              summary=f"Summary {position} says the bridge reopened. It cost {position} million euros.")
    return project


def resumed_line(html: str) -> str | None:
    found = RESUMED_LINE.search(html)
    return " ".join(found.group(1).split()) if found else None


def test_each_resumption_of_a_killed_job_is_counted_on_its_row_its_line_and_in_the_api(
    queue: Path, admin_user: Any, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any,
) -> None:
    monkeypatch.setattr(embedding, "LONG_TEXT_CHARS", 40)
    project = texts_project(admin_user)
    job = embedding.queue_embedding(project)
    admin = login(admin_user)
    api = f"/api/projects/{project.slug}/jobs/{job.pk}/"
    assert (job.resumed, job.resumed_at) == (0, None)
    assert resumed_line(admin.get(f"/projects/{project.slug}/").content.decode()) is None
    assert {key: admin.get(api).json()[key] for key in ("resumed", "resumed_at")} == {"resumed": 0, "resumed_at": None}

    real_embed = embedder.embed
    kill_on_call(monkeypatch, embedder, "embed", 2)  # one text written, the worker dies on the second
    run_until_killed(tasks.embed_project_texts, job)
    # Two workers start, the second beside the first: queued again once, counted once.
    queued_again_at_worker_start(queue, tasks.embed_project_texts, job, starts=2)
    job.refresh_from_db()
    assert job.resumed == 1 and abs(job.resumed_at - timezone.now()) < timedelta(minutes=1)
    first_at = job.resumed_at

    kill_on_call(monkeypatch, embedder, "embed", 2)  # the next worker dies too, a text further on
    with pytest.raises(WorkerKilled):
        deliver_all(queue, django_capture_on_commit_callbacks)
    queued_again_at_worker_start(queue, tasks.embed_project_texts, job)
    monkeypatch.setattr(embedder, "embed", real_embed)
    deliver_all(queue, django_capture_on_commit_callbacks)  # the third worker finishes it
    job.refresh_from_db()
    assert (job.status, job.done, job.total) == (Job.Status.DONE, 5, 5)
    assert job.resumed == 2 and job.resumed_at >= first_at and job.options["model"]  # its own options stay

    line = resumed_line(admin.get(f"/projects/{project.slug}/").content.decode())
    assert line == f"Resumed 2 times after its worker stopped (last at {job.resumed_at:%Y-%m-%d %H:%M:%S} UTC)."
    assert resumed_line(admin.get(f"/projects/{project.slug}/jobs/{job.pk}/", HTTP_HX_REQUEST="true")
                        .content.decode()) == line
    body = admin.get(api).json()
    assert body["resumed"] == 2 and body["resumed_at"].startswith(f"{job.resumed_at:%Y-%m-%dT%H:%M:%S}")
    worker_start()
    job.refresh_from_db()
    assert job.resumed == 2  # done: not queued, not counted


def test_one_resumption_reads_time_not_times_and_a_resumed_export_still_downloads_as_asked(
    queue: Path, batch: Batch, admin_user: Any, django_capture_on_commit_callbacks: Any,
) -> None:
    job = export.start_export(batch.project, export.ExportOptions(format="jsonl"), created_by=admin_user)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, done=1)  # its worker died mid-file
    queued_again_at_worker_start(queue, tasks.run_export, job)
    deliver_all(queue, django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert job.status == Job.Status.DONE and job.resumed == 1 and job.options["format"] == "jsonl"
    admin = login(admin_user)
    page = admin.get(f"/projects/{batch.project.slug}/").content.decode()
    assert resumed_line(page).startswith("Resumed 1 time after its worker stopped (last at ")
    # The export's own options are read beside the count: its file is written and downloads as asked.
    download = admin.get(f"/projects/{batch.project.slug}/exports/{job.pk}/download/")
    assert download.status_code == 200 and download["Content-Type"] == "application/jsonl; charset=utf-8"
    assert len(b"".join(download.streaming_content).splitlines()) == 3


def test_a_job_the_broker_refuses_to_queue_again_is_failed_and_not_counted(
    queue: Path, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = embedding.queue_embedding(texts_project(admin_user))
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING)

    def refused(number: int) -> None:
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(tasks.embed_project_texts, "delay", refused)
    assert jobs.resume_stale_jobs() == []
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "could not be queued" in job.error
    assert job.resumed == 0 and "resumed" not in job.options and job.options["model"]


@pytest.mark.parametrize("stored", [True, "2", -1, None, 1.5])
def test_an_unreadable_count_reads_as_never_resumed(stored: Any) -> None:
    job = Job(kind=Job.Kind.EMBED, options={"resumed": stored, "resumed_at": "not a time"})
    assert (job.resumed, job.resumed_at) == (0, None)
