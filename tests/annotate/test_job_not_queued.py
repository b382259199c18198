"""A job whose task the broker refuses is failed with the error and what to check, never left "queued" for good,
and the page or the API says so instead of answering 500.

The refusal is kombu's own: the filesystem transport writing into a queue folder that is gone raises
FileNotFoundError. The tests run without a transaction around them, as a request does, so each job's task is sent
when its row commits.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from kombu import Connection

from annotate import tasks
from annotate.models import Batch, Job, Membership, Project
from annotate.services.jobs import RESUMING_TASKS
from tests.annotate.test_ingest import example
from tests.conftest import login
from tests.pairs.conftest import make_pair_items

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def gone_queue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every annotate job task is sent through kombu's filesystem transport into a queue folder that does not exist."""
    missing = tmp_path / "broker" / "queue"
    options = {"data_folder_in": str(missing), "data_folder_out": str(missing)}
    for name in RESUMING_TASKS.values():
        task = getattr(tasks, name)

        def send(number: int, task: Any = task) -> None:
            with Connection("filesystem://", transport_options=options) as broker:
                task.apply_async((number,), connection=broker)

        monkeypatch.setattr(task, "delay", send)
    return missing


def _upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


def messages(response: Any) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def assert_not_queued(job: Job, kind_words: str, missing: Path) -> None:
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.finished_at is not None
    assert job.error.startswith(f"Job {job.pk} ({kind_words}) could not be queued for the worker: "
                                f"FileNotFoundError: "), job.error
    assert str(missing) in job.error and job.error.endswith("Then start it again.")


def test_an_export_the_broker_refuses_fails_and_the_page_says_why(
    batch: Batch, admin_user: Any, gone_queue: Path
) -> None:
    response = login(admin_user).post("/projects/demo/exports/", {"format": "jsonl", "round": "1"}, follow=True)
    assert response.status_code == 200
    job = Job.objects.get(project=batch.project, kind=Job.Kind.EXPORT)
    assert_not_queued(job, "export", gone_queue)
    assert messages(response) == [f"Export not started: {job.error}"]
    assert not Job.objects.filter(status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).exists()


def test_an_import_whose_embedding_job_the_broker_refuses_is_kept_and_says_why(
    project: Project, admin_user: Any, gone_queue: Path
) -> None:
    client = login(admin_user)
    answer = client.post("/api/projects/demo/imports/", {"format": "faithbench", "file": [
        _upload("batch_7.json", json.dumps(example()).encode())]})
    assert answer.status_code == 201, answer.content
    job = Job.objects.get(project=project, kind=Job.Kind.EMBED)
    assert_not_queued(job, "sentence splitting and embedding", gone_queue)
    body = answer.json()
    assert body["summary"] == "Imported 1 batch, 2 samples and 4 spans; sentence embedding could not be started."
    assert body["warnings"] == [f"Sentence embedding not started: {job.error}"]
    assert body["embedding_job"] == job.pk and body["samples"] == 2  # the import itself stands

    page = client.post("/projects/demo/import/", {"files": [_upload("batch_8.json", json.dumps(example()).encode())],
                                                  "allow_repeats": "1"}, follow=True)  # batch_7's samples again
    second = Job.objects.filter(project=project, kind=Job.Kind.EMBED).order_by("-pk").first()
    assert second is not None and second.pk != job.pk
    assert f"Sentence embedding not started: {second.error}" in messages(page)


def test_span_vectors_the_broker_refuses_fail_and_the_wizard_says_why(admin_user: Any, gone_queue: Path) -> None:
    project = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    Membership.objects.create(project=project, user=admin_user, role=Membership.Role.ADMIN)
    make_pair_items(project, 2, round_number=None)
    response = login(admin_user).post("/projects/pairs/pairs/vectors/", follow=True)
    assert response.status_code == 200
    job = Job.objects.get(project=project, kind=Job.Kind.PAIR_VECTORS)
    assert_not_queued(job, "span vectors of pair items", gone_queue)
    assert f"Span vectors not started: {job.error}" in messages(response)
