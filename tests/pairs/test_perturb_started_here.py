"""The `perturb_pairs` command runs its job in the foreground, and a worker starting meanwhile leaves it alone. The
command made its job queued, without a message, and only then took the job's lock to run it: a worker starting in
between (resume_stale_jobs, on every worker start with the embedded broker) found a queued job nobody ran and no
message waited for, sent a spare message and counted a resumption that never happened. The lock is now taken before
the job is committed (annotate.services.jobs.start_held), as the `judge` and `triage` commands do for their runs
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
from annotate.models import Job, PerturbedText, Project
from annotate.services import jobs
from tests.judging.broker_queue import meet_a_starting_worker_on_each_commit
from tests.pairs.factories_perturbation import build_tiny_models
from tests.pairs.test_perturbation import add_originals, use_tiny_models

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_tiny_models(tmp_path_factory.mktemp("perturbation-models"))


@pytest.fixture
def worker_starts_as_each_job_is_committed(
    settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, list[Any]]:
    return meet_a_starting_worker_on_each_commit(
        settings, tmp_path, monkeypatch, model=Job, task=tasks.perturb_originals, resume=jobs.resume_stale_jobs
    )


def test_a_worker_starting_as_the_perturb_pairs_command_commits_its_job_leaves_the_job_to_it(
    pairs_project: Project, model_dirs: tuple[Path, Path], settings: Any,
    worker_starts_as_each_job_is_committed: dict[str, list[Any]],
) -> None:
    use_tiny_models(pairs_project, model_dirs, settings)
    add_originals(pairs_project)
    out = io.StringIO()
    call_command("perturb_pairs", "--project", "pairs", "--seed", "3", stdout=out)
    assert worker_starts_as_each_job_is_committed == {"resumed": [[]], "sent": []}  # no spare message
    job = Job.objects.get(project=pairs_project, kind=Job.Kind.PERTURB)
    assert (job.status, job.done, job.resumed) == (Job.Status.DONE, 3, 0)
    assert "Done: 2 perturbed text(s)" in out.getvalue()
    assert PerturbedText.objects.filter(project=pairs_project).count() == 2
