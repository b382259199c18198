"""A real worker brings highlighting back after EMBEDDING_MODEL changed: the first similarity request on another
model's vectors queues one re-embedding, the worker runs it, and the next request is answered.

"old-model" stands for the model before the change (its vectors kept, its name on the rows); the configured one
is the packaged model.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from annotate.models import Job, Membership, Passage, Project, Sample
from annotate.services import ingest
from tests.conftest import login, make_user
from tests.e2e.worker_helpers import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = (ROOT / "tests" / "annotate" / "faithbench_example.json").read_bytes()


def test_a_similarity_request_on_another_models_vectors_gets_them_recomputed_by_the_worker(
    worker: subprocess.Popen,
) -> None:
    project = Project.objects.create(name="Re-embed", slug="reembed")
    imported = ingest.import_files(project, [("batch_1.json", EXAMPLE)])
    assert wait_for(imported.job, worker).status == Job.Status.DONE
    for model_class in (Passage, Sample):
        model_class.objects.filter(project=project).update(embedding_model="old-model")
    reader = make_user("reader")
    Membership.objects.create(project=project, user=reader, role=Membership.Role.ADMIN)
    client = login(reader)
    sample = Sample.objects.filter(project=project).order_by("pk").first()

    def ask() -> tuple[int, dict]:
        answer = client.post(f"/api/samples/{sample.pk}/similarity/", {"side": "summary", "start": 0, "end": 5},
                             content_type="application/json")
        return answer.status_code, answer.json()

    status, body = ask()
    assert status == 409 and body["detail"].startswith("the sentence vectors were made with another model (old-model)")
    job = Job.objects.filter(project=project, kind=Job.Kind.EMBED).exclude(pk=imported.job.pk).get()
    # Asked again while the worker embeds (409), then while this process loads the model (503): still that one job.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status, body = ask()
        if status not in (409, 503):
            break
        time.sleep(0.5)
    assert status == 200 and body["target"] == "source", body
    assert wait_for(job, worker).status == Job.Status.DONE and (job.done, job.total) == (3, 3)
    assert Job.objects.filter(project=project, kind=Job.Kind.EMBED).count() == 2
