"""A real Celery worker runs a judge run of 500 samples, is killed with SIGKILL mid-run, and a new worker finishes
it: every sample judged exactly once into the run, none lost.

What this found about the embedded broker: kombu's filesystem transport removes
a message from the queue folder when a worker takes it, so acks_late and
reject_on_worker_lost cannot deliver a SIGKILLed worker's task again (nothing
is left to redeliver). The recovery is the worker's own: when it starts it
queues every judge run that is queued or running and that no process holds the
lock of (judging.tasks.resume_judge_runs_on_worker_start ->
judging.services.runs.resume_stale_runs).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.db import transaction

from annotate.models import Project
from judging.models import Judgement, JudgeRun
from judging.services import runs
from judging.services.judges import create_judge
from tests.e2e.worker_helpers import database_url
from tests.judging.llm_server import LoopbackLLM, user_text
from tests.judging.run_factories import add_samples, tag_of

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]
SAMPLES = 500


def start_worker() -> subprocess.Popen:
    """A worker started as the `worker` fixture starts one (same database and data folder, solo pool)."""
    env = {**os.environ, "DATABASE_URL": database_url(), "FAITHLAB_DATA_DIR": str(settings.DATA_DIR)}
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--loglevel=info",
         "--without-heartbeat", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


@pytest.fixture
def second_worker() -> Iterator[list[subprocess.Popen]]:
    started: list[subprocess.Popen] = []
    yield started
    for process in started:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def judged(run: JudgeRun) -> int:
    return Judgement.objects.filter(run=run).count()


def test_a_killed_worker_s_run_is_finished_by_the_next_worker_with_each_sample_once(
    worker: subprocess.Popen, second_worker: list[subprocess.Popen]
) -> None:
    project = Project.objects.create(name="Judge worker", slug="judge-worker")
    add_samples(project, SAMPLES)
    with LoopbackLLM(delay=0.04) as server:
        judge = create_judge(project, name="loop", kind="rubric", base_url=server.base_url, model="test-model",
                             concurrency=8)
        with transaction.atomic():
            run = runs.start_run(project, judge)

        deadline = time.monotonic() + 120
        while judged(run) < 100:
            if worker.poll() is not None:
                pytest.fail(f"worker exited early:\n{worker.stdout.read() if worker.stdout else ''}")
            if time.monotonic() > deadline:
                pytest.fail(f"the worker judged {judged(run)} samples in 120 s")
            time.sleep(0.05)
        worker.kill()  # SIGKILL: no warm shutdown, no acknowledgement, in-flight calls and unwritten results lost
        worker.wait(timeout=20)
        run.refresh_from_db()
        at_kill = judged(run)
        assert run.status == JudgeRun.Status.RUNNING and 100 <= at_kill < SAMPLES, (run.status, at_kill)
        assert run.resumed == 0  # queued by start_run, taken by the first worker: never resumed yet
        # Nothing is left in the broker's queue folder for this run: the filesystem transport cannot redeliver.
        queue_folder = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
        assert not [path.name for path in queue_folder.iterdir() if path.name.endswith(".msg")]

        second_worker.append(start_worker())
        deadline = time.monotonic() + 180
        while True:
            run.refresh_from_db()
            if run.status in (JudgeRun.Status.DONE, JudgeRun.Status.FAILED):
                break
            if second_worker[0].poll() is not None:
                pytest.fail(f"second worker exited:\n{second_worker[0].stdout.read()}")
            if time.monotonic() > deadline:
                second_worker[0].terminate()
                pytest.fail(f"run still {run.status} with {judged(run)} judged:\n{second_worker[0].stdout.read()}")
            time.sleep(0.25)
        requested = {tag_of(user_text(body)) for body in server.requests}

    assert run.status == JudgeRun.Status.DONE, run.error
    assert judged(run) == SAMPLES
    assert Judgement.objects.filter(run=run).values("sample").distinct().count() == SAMPLES
    assert (run.total, run.done, run.scored, run.failed) == (SAMPLES, SAMPLES, SAMPLES, 0)
    assert requested == {f"s{index}" for index in range(SAMPLES)}
    # Only the calls in flight or not yet written when the worker died were sent twice.
    assert SAMPLES <= len(server.requests) < SAMPLES + 200
    assert run.calls == SAMPLES - run.cached
    # The second worker found the run orphaned and queued it again: the run counts it, so its page can say that
    # the killed worker's requests in flight (sent, some answered, none recorded) are not in its calls or cost.
    assert run.resumed >= 1
