"""`manage.py embed` runs its new job in the foreground, and a worker starting meanwhile leaves it alone. The command
made its job queued, without a message, and only then took the job's lock to run it: a worker starting in between
(resume_stale_jobs, on every worker start with the embedded broker) found a queued job nobody ran and no message
waited for, sent a spare message and counted a resumption that never happened. The lock is now taken before the job
is committed (annotate.services.jobs.start_held), as the `judge` and `triage` commands do for their runs
(tests/judging/test_run_started_here.py).

The worker's start is played at the moment the job is committed (an on_commit callback of the job's creation), so
these tests commit for real.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotate import tasks
from annotate.models import Batch, Job, Sample
from annotate.services import jobs
from tests.judging.broker_queue import meet_a_starting_worker_on_each_commit

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker_starts_as_each_job_is_committed(
    settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, list[Any]]:
    return meet_a_starting_worker_on_each_commit(
        settings, tmp_path, monkeypatch, model=Job, task=tasks.embed_project_texts, resume=jobs.resume_stale_jobs
    )


def test_a_worker_starting_as_the_embed_command_commits_its_job_leaves_the_job_to_it(
    batch: Batch, worker_starts_as_each_job_is_committed: dict[str, list[Any]]
) -> None:
    out = io.StringIO()
    call_command("embed", "--project", batch.project.slug, stdout=out)
    assert worker_starts_as_each_job_is_committed == {"resumed": [[]], "sent": []}  # no spare message
    job = Job.objects.get(project=batch.project, kind=Job.Kind.EMBED)
    assert (job.status, job.done, job.total, job.resumed) == (Job.Status.DONE, 4, 4, 0)
    assert out.getvalue().startswith("Embedding 4 text(s) of demo with ") and "Done: 4 text(s)" in out.getvalue()
    assert not Sample.objects.filter(project=batch.project, embedding_model="").exists()

