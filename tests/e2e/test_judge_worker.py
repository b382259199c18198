"""A real Celery worker runs a judge run of 500 samples, is killed with SIGKILL mid-run, and a new worker finishes
it: every sample judged exactly once into the run, none lost. The same for an embedding job of annotate (every
text embedded and counted once).

What this found about the embedded broker: kombu's filesystem transport removes
a message from the queue folder when a worker takes it, so acks_late and
reject_on_worker_lost cannot deliver a SIGKILLed worker's task again (nothing
is left to redeliver). The recovery is the worker's own: when it starts it
queues every judge run that is queued or running and that no process holds the
lock of (judging.tasks.resume_judge_runs_on_worker_start ->
judging.services.runs.resume_stale_runs), and every annotate job likewise
(annotate.tasks.resume_jobs_on_worker_start -> annotate.services.jobs.resume_stale_jobs).
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

from annotate.models import Batch, Job, Passage, Project, Sample
from annotate.services import embedding
from judging.models import Judgement, JudgeRun
from judging.services import runs
from judging.services.judges import create_judge
from tests.e2e.worker_helpers import database_url
from tests.judging.llm_server import LoopbackLLM, user_text
from tests.judging.run_factories import add_samples, tag_of

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]
SAMPLES = 500


def start_worker(**extra_env: str) -> subprocess.Popen:
    """A worker started as the `worker` fixture starts one (same database and data folder, solo pool), with
    ``extra_env`` in its environment."""
    env = {**os.environ, "DATABASE_URL": database_url(), "FAITHLAB_DATA_DIR": str(settings.DATA_DIR), **extra_env}
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


TEXTS = 1200  # 100 passages of 11 summaries: 1200 texts, embedded 64 at a time or fewer


def queue_files() -> list[str]:
    folder = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
    return [path.name for path in folder.iterdir() if path.name.endswith(".msg")]


def embedded_rows(project: Project, model: str) -> dict[tuple[str, int], bytes]:
    """The texts embedded with ``model``: (kind, id) -> their vectors."""
    rows = {("passage", pk): bytes(vectors) for pk, vectors in Passage.objects.filter(
        project=project, embedding_model=model).values_list("pk", "embeddings")}
    rows.update({("sample", pk): bytes(vectors) for pk, vectors in Sample.objects.filter(
        project=project, embedding_model=model).values_list("pk", "embeddings")})
    return rows


def test_a_killed_worker_s_embedding_job_is_finished_by_the_next_worker_with_each_text_once(
    second_worker: list[subprocess.Popen],
) -> None:
    project = Project.objects.create(name="Embed worker", slug="embed-worker")
    batch = Batch.objects.create(project=project, name="b1")
    for number in range(TEXTS // 12):
        passage = Passage.objects.create(project=project, external_id=f"p{number}", text=(
            f"Report {number} says the bridge reopened. Engineers replaced {number + 3} cables. It cost a lot."))
        Sample.objects.bulk_create(
            Sample(project=project, passage=passage, batch=batch, position=index, external_id=f"{number}-{index}",
                   summary=f"Summary {index} of report {number}: the bridge reopened. It needed {index} cables.")
            for index in range(11)
        )
    # One slice for the whole job: whatever is left when the worker dies has no message waiting for it.
    first = start_worker(EMBEDDING_SLICE_SECONDS="3000", EMBEDDING_SLICE_SENTENCES="1000000")
    second_worker.append(first)
    with transaction.atomic():
        job = embedding.queue_embedding(project)
    model = job.options["model"]
    assert job.total == TEXTS

    deadline = time.monotonic() + 180
    while True:
        job.refresh_from_db()
        if job.done >= 128:
            break
        if first.poll() is not None:
            pytest.fail(f"worker exited early:\n{first.stdout.read() if first.stdout else ''}")
        if time.monotonic() > deadline:
            pytest.fail(f"the worker embedded {job.done} texts in 180 s")
        time.sleep(0.02)
    first.kill()  # SIGKILL: the job's lock goes with the process, its message is already gone
    first.wait(timeout=20)
    job.refresh_from_db()
    at_kill = embedded_rows(project, model)
    assert job.status == Job.Status.RUNNING and 128 <= job.done == len(at_kill) < TEXTS, (job.status, job.done)
    assert not queue_files()  # nothing left to redeliver: only a worker start can go on with the job

    second_worker.append(start_worker())
    deadline = time.monotonic() + 300
    while True:
        job.refresh_from_db()
        if job.status in (Job.Status.DONE, Job.Status.FAILED):
            break
        if second_worker[-1].poll() is not None:
            pytest.fail(f"second worker exited:\n{second_worker[-1].stdout.read()}")
        if time.monotonic() > deadline:
            second_worker[-1].terminate()
            pytest.fail(f"job still {job.status} at {job.done} of {TEXTS}:\n{second_worker[-1].stdout.read()}")
        time.sleep(0.25)

    assert job.status == Job.Status.DONE, job.error
    assert (job.done, job.total) == (TEXTS, TEXTS)  # each text counted once
    after = embedded_rows(project, model)
    assert len(after) == TEXTS
    assert {key: after[key] for key in at_kill} == at_kill  # what the killed worker wrote is kept as it was
    assert not Passage.objects.filter(project=project, embeddings__isnull=True).exists()
    assert not Sample.objects.filter(project=project, embeddings__isnull=True).exists()
