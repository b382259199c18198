"""The `judge` and `triage` commands execute their runs in the foreground, and a worker starting meanwhile leaves them
alone. Each command made its run queued, without a message, and only then took the run's lock to execute it: a
worker starting in between (resume_stale_runs, on every worker start with the embedded broker) found a queued run
nobody executed and no message waited for, queued a spare message and counted a resumption that never happened.
The lock is now taken before the run is committed (judging.services.runs.execute_new_run).

The worker's start is played at the moment each run is committed (an on_commit callback of the run's creation), so
these tests commit for real.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Project
from judging import tasks
from judging.models import JudgeRun
from judging.services import runs
from tests.judging.broker_queue import meet_a_starting_worker_on_each_commit
from tests.judging.llm_server import LoopbackLLM
from tests.judging.run_factories import add_samples
from tests.judging.test_triage import first_pass_script, triage_project

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker_starts_as_each_run_is_committed(
    settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, list[Any]]:
    return meet_a_starting_worker_on_each_commit(
        settings, tmp_path, monkeypatch, model=JudgeRun, task=tasks.execute_judge_run, resume=runs.resume_stale_runs
    )


def test_a_worker_starting_as_the_judge_command_commits_its_run_leaves_the_run_to_it(
    project: Project, worker_starts_as_each_run_is_committed: dict[str, list[Any]]
) -> None:
    add_samples(project, 3)
    out = io.StringIO()
    with LoopbackLLM() as server:
        call_command("judge", "--project", project.slug, "--base-url", server.base_url, "--model", "test-model",
                     "--json", stdout=out)
    summary = json.loads(out.getvalue())
    run = JudgeRun.objects.get(pk=summary["run"])
    assert worker_starts_as_each_run_is_committed == {"resumed": [[]], "sent": []}  # no spare message
    assert (run.status, run.done, run.resumed) == (JudgeRun.Status.DONE, 3, 0)
    assert (summary["items"], summary["scored"]) == (3, 3)


def test_a_worker_starting_as_the_triage_command_commits_each_run_leaves_them_to_it(
    project: Project, worker_starts_as_each_run_is_committed: dict[str, list[Any]]
) -> None:
    add_samples(project, 5, batch_name="one")
    out = io.StringIO()
    with LoopbackLLM(first_pass_script) as fast, LoopbackLLM() as strong:
        triage_project(project, fast, strong)
        call_command("triage", "--project", project.slug, "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert worker_starts_as_each_run_is_committed == {"resumed": [[], []], "sent": []}  # first pass, explainer
    assert result["flagged"] == 2 and result["explain"]["status"] == "done"
    assert list(JudgeRun.objects.values_list("status", "resumed")) == [(JudgeRun.Status.DONE, 0)] * 2


def test_execute_new_run_executes_nothing_when_there_is_nothing_to_run() -> None:
    assert runs.execute_new_run(lambda: None) is None
