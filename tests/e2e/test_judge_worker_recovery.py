"""Real Celery workers lose a judge run two ways on the embedded filesystem broker, as a deployment review found
(PostgreSQL, gunicorn, `celery worker --concurrency=2`); each run must still finish, every sample judged once into
its results, and count what it went through (`resumed`), for its page to say that calls went uncounted.

1. A worker takes a queued run's message and dies before starting it (its prefork pool hung, README "Deploying for
   real" step 6, then the whole worker was killed and started again): the run stayed "queued 0/25" with the broker's
   folder empty, for good. The next worker's start now queues it again.
2. The pool process running a run is killed with SIGKILL (what the OOM killer does): Celery (acks_late, reject on
   worker lost) puts the task back and runs it again, and the run finished with `resumed` 0 and no notice, though
   the endpoint had answered the calls in flight at the kill. It is now counted as a resumption.

Against the loopback OpenAI-style server (tests/judging/llm_server.py), never a mock of the SDK.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import transaction
from django.urls import reverse

from annotate.models import Project
from annotate.services.jobs.locks import waiting_ids
from judging.models import Judgement, JudgeRun
from judging.services import runs
from judging.services.judges import create_judge
from judging.tasks import execute_judge_run
from tests.conftest import login
from tests.e2e.worker_helpers import ROOT, database_url
from tests.judging.llm_server import LoopbackLLM, user_text
from tests.judging.run_factories import add_samples, tag_of

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator[Callable[..., tuple[subprocess.Popen, Path]]]:
    """Starts a worker on the test's database and data folder (so on its broker folder), with the arguments given
    after `worker` (a prefork pool of `--concurrency=N`, or `--pool=solo`); gives it and its log file. Each is
    stopped afterwards, its whole process group killed if SIGTERM does not end it."""
    started: list[subprocess.Popen] = []

    def start(*arguments: str) -> tuple[subprocess.Popen, Path]:
        env = {**os.environ, "DATABASE_URL": database_url(), "FAITHLAB_DATA_DIR": str(settings.DATA_DIR),
               "EMBEDDING_WARMUP": "false"}  # judge runs only: no model to load
        log = tmp_path / f"worker-{len(started)}.log"
        with log.open("wb") as out:
            started.append(subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", "worker", *arguments, "--loglevel=info",
                 "--without-heartbeat", "--without-gossip", "--without-mingle"],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            ))
        return started[-1], log

    yield start
    for process in started:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def wait_until(what: str, done: Callable[[], Any], worker: subprocess.Popen, log: Path, seconds: float) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := done()):
        if worker.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {seconds} s (worker exit status {worker.poll()}):\n{log.read_text()}")
        time.sleep(0.1)
    return found


def queue_files() -> list[Path]:
    return list(Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]).glob("*.msg"))


def ended(run: JudgeRun) -> bool:
    run.refresh_from_db()
    return run.status in (JudgeRun.Status.DONE, JudgeRun.Status.FAILED)


def judged(run: JudgeRun) -> int:
    return Judgement.objects.filter(run=run).count()


def resumed_note(client: Any, run: JudgeRun) -> str:
    html = client.get(reverse("judging-run", args=[run.project.slug, run.pk])).content.decode()
    note = re.search(r'data-role="run-resumed">(.*?)</span>', html, re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", note.group(1))).split()) if note else ""


def test_a_queued_run_whose_message_a_dead_worker_took_is_started_by_the_next_worker(
    start_worker: Callable[..., tuple[subprocess.Popen, Path]],
) -> None:
    project = Project.objects.create(name="Lost message", slug="lost-message")
    add_samples(project, 25)
    with LoopbackLLM() as server:
        judge = create_judge(project, name="loop", kind="rubric", base_url=server.base_url, model="test-model",
                             concurrency=4)
        before = set(queue_files())
        with transaction.atomic():
            run = runs.start_run(project, judge)
        # The worker that took this message died with it before starting the run: the message is gone.
        for message in set(queue_files()) - before:
            message.unlink()
        assert run.pk not in waiting_ids(execute_judge_run)  # (other tests' messages may wait in the folder)
        assert runs.start_or_reuse_run(project, judge) == (run, False)  # a retried start answers the stuck run

        worker, log = start_worker("--pool=solo")
        wait_until("the run is finished", lambda: ended(run), worker, log, 90)
        requested = [tag_of(user_text(body)) for body in server.requests]

    assert run.status == JudgeRun.Status.DONE, run.error
    assert (run.total, run.done, run.scored, run.resumed) == (25, 25, 25, 1)
    assert judged(run) == 25 and Judgement.objects.filter(run=run).values("sample").distinct().count() == 25
    assert sorted(requested) == sorted(f"s{index}" for index in range(25))  # each sample asked once
    assert "judge runs queued again after a worker start" in log.read_text()


def flock_holder(path: Path) -> int | None:
    """The process holding a flock on ``path`` (from /proc/locks), or None."""
    inode = path.stat().st_ino
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if len(fields) > 5 and fields[1] == "FLOCK" and fields[5].endswith(f":{inode}"):
            return int(fields[4])
    return None


SAMPLES = 80


def test_a_run_whose_pool_process_is_killed_is_delivered_again_finishes_and_counts_the_resumption(
    start_worker: Callable[..., tuple[subprocess.Popen, Path]], project: Project, admin_user: Any
) -> None:
    add_samples(project, SAMPLES)
    worker, log = start_worker("--concurrency=2")  # as README's "Deploying for real" starts it
    wait_until("the worker is ready", lambda: " ready." in log.read_text(), worker, log, 90)
    with LoopbackLLM(delay=0.25) as server:  # a slow endpoint: calls are in flight at the kill
        judge = create_judge(project, name="loop", kind="rubric", base_url=server.base_url, model="test-model",
                             concurrency=4)
        with transaction.atomic():
            run = runs.start_run(project, judge)
        wait_until("a quarter of the run is judged", lambda: judged(run) >= SAMPLES // 4, worker, log, 90)
        lock = Path(settings.DATA_DIR) / "locks" / f"judge-run-{run.pk}.lock"
        pool_process = wait_until("the run's pool process", lambda: flock_holder(lock), worker, log, 10)
        assert pool_process != worker.pid
        os.kill(pool_process, signal.SIGKILL)  # as the OOM killer does: in-flight calls and unwritten answers lost
        at_kill = judged(run)

        wait_until("the run is finished", lambda: ended(run), worker, log, 150)
        sent = len(server.requests)

    assert run.status == JudgeRun.Status.DONE, run.error
    assert at_kill < SAMPLES and judged(run) == SAMPLES
    assert Judgement.objects.filter(run=run).values("sample").distinct().count() == SAMPLES  # each judged once
    assert (run.done, run.scored) == (SAMPLES, SAMPLES)
    assert sent >= SAMPLES  # the calls in flight at the kill were sent again, answered twice
    assert run.resumed >= 1, log.read_text()
    note = resumed_note(login(admin_user), run)
    assert note.startswith(f"Resumed {run.resumed} time") and "about the judge's concurrency, 4, each with its " \
        "retries" in note, note
