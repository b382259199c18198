"""The `synthetic_set` command writes its set in the foreground, and a worker starting meanwhile leaves it alone. The
command made its set queued, without a message, and only then took the set's lock to write it: a worker starting in
between (resume_stale_synthetic_sets, on every worker start with the embedded broker) found a queued set nobody wrote
and no message waited for, and sent a spare message for it, which a worker could take before the command did (the
command then printed the set still queued or running, and returned). The lock is now taken before the set is
committed (judging.services.synthetic.execute_new_set), as the `judge` and `triage` commands do for their runs
(tests/judging/test_run_started_here.py).

The worker's start is played at the moment the set is committed (an on_commit callback of the set's creation), so
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
from judging.models import SyntheticSet
from judging.services import synthetic
from tests.judging.broker_queue import meet_a_starting_worker_on_each_commit
from tests.judging.llm_server import LoopbackLLM
from tests.judging.synthetic_scene import add_outputs, writer_judge, writer_script

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker_starts_as_each_set_is_committed(
    settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, list[Any]]:
    return meet_a_starting_worker_on_each_commit(
        settings, tmp_path, monkeypatch, model=SyntheticSet, task=tasks.execute_synthetic_set, resume=synthetic.resume_stale_synthetic_sets
    )


def test_a_worker_starting_as_the_synthetic_set_command_commits_its_set_leaves_the_set_to_it(
    project: Project, worker_starts_as_each_set_is_committed: dict[str, list[Any]]
) -> None:
    add_outputs(project)
    out = io.StringIO()
    with LoopbackLLM(script=writer_script()) as server:
        writer_judge(project, server.base_url)
        call_command("synthetic_set", "--project", project.slug, "--name", "cli", "--writer-judge", "writer",
                     "--json", stdout=out)
    assert worker_starts_as_each_set_is_committed == {"resumed": [[]], "sent": []}  # no spare message
    summary = json.loads(out.getvalue())
    assert summary["status"] == "done" and summary["rewrites"] == {"needed": 20, "ok": 20, "error": 0}
    assert server.chat_calls == 20
