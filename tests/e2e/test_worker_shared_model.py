"""A real prefork Celery worker, as README's "Deploying for real" starts it: its main process loads the embedding model
before it forks its pool (config/celery.py), and an embedding job run by a forked pool process stores the same
vectors, to the bit, as one run in this process; so does a pool process billiard forks later, to replace one that
reached --max-tasks-per-child or was killed. Each of them shares the main process's copy instead of loading one of
its own (about 400 MiB of its own memory; docs/performance.md, "The Celery worker's memory").
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kombu import Connection

from annotate.models import Job, Passage, Project, Sample
from annotate.services import embedding, ingest, jobs
from annotate.tasks import embed_project_texts
from tests.e2e.worker_helpers import ROOT, database_url

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
EXAMPLE = (ROOT / "tests" / "annotate" / "faithbench_example.json").read_bytes()
# A pool process that loaded its own copy held about 390 MiB of its own after an embedding job; one sharing the main
# process's copy about 50 (bench/bench_worker_memory.py).
OWN_COPY_MIB = 200


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[Job]:
    """Jobs the imports queue, kept here instead of sent: this test sends each one when it chooses, to its worker."""
    kept: list[Job] = []
    monkeypatch.setattr(jobs, "queue_job", lambda job, task: kept.append(job))
    return kept


@pytest.fixture
def prefork_worker(tmp_path: Path) -> Iterator[Callable[[], tuple[subprocess.Popen, Path]]]:
    """Starts a prefork worker with one pool process that is replaced after two tasks, on a broker folder of its own
    (so no task another test left in the suite's queue reaches it); gives the worker and its log file."""
    started: list[subprocess.Popen] = []

    def start() -> tuple[subprocess.Popen, Path]:
        env = {**os.environ, "DATABASE_URL": database_url(), "FAITHLAB_DATA_DIR": str(tmp_path),
               "EMBEDDING_WARMUP": "true"}
        log = tmp_path / "worker.log"
        with log.open("wb") as out:
            started.append(subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", "worker", "--concurrency=1", "--max-tasks-per-child=2",
                 "--loglevel=info", "--without-heartbeat", "--without-gossip", "--without-mingle"],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            ))
        return started[-1], log

    yield start
    for process in started:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def vectors(project: Project) -> list[tuple[Any, bytes]]:
    rows = [*Passage.objects.filter(project=project).order_by("pk"),
            *Sample.objects.filter(project=project).order_by("pk")]
    return [(row.sentences, bytes(row.embeddings)) for row in rows]


def pool(worker: subprocess.Popen) -> list[int]:
    """The worker's pool processes: the children of any of its threads (billiard forks a replacement from its
    supervisor thread, and /proc lists a child under the thread that forked it)."""
    return sorted(int(pid) for children in Path(f"/proc/{worker.pid}/task").glob("*/children")
                  for pid in children.read_text().split())


def private_mib(pid: int) -> int:
    kib = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, value = line.split()[:2]
        kib[key] = int(value)
    return (kib["Private_Clean:"] + kib["Private_Dirty:"]) // 1024


def wait(what: str, done: Any, worker: subprocess.Popen, log: Path, seconds: float = 120) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := done()):
        if worker.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {seconds} s (worker exit status {worker.poll()}):\n{log.read_text()}")
        time.sleep(0.2)
    return found


def test_forked_pool_processes_a_replaced_one_too_embed_with_the_main_processs_model(
    queued: list[Job], prefork_worker: Callable[[], tuple[subprocess.Popen, Path]], tmp_path: Path
) -> None:
    reference = Project.objects.create(name="In this process", slug="in-process")
    ingest.import_files(reference, [("batch_1.json", EXAMPLE)])
    embedding.run_embedding_job(queued.pop().pk)
    expected = vectors(reference)
    assert len(expected) == 3 and all(blob for _, blob in expected)  # one passage, two summaries
    worker, log = prefork_worker()  # now: a worker that starts while a job runs here would queue it again

    folders = {name: tmp_path / "broker" / name for name in ("queue", "processed", "control")}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    options = {"data_folder_in": str(folders["queue"]), "data_folder_out": str(folders["queue"]),
               "processed_folder": str(folders["processed"]), "control_folder": str(folders["control"])}
    wait("the worker is ready", lambda: " ready." in log.read_text(), worker, log)

    def send(project: Project, files: list[tuple[str, bytes]]) -> Job:
        """Import files into a project and send its embedding job to the worker."""
        ingest.import_files(project, files)
        job = queued.pop()
        with Connection("filesystem://", transport_options=options) as broker:
            embed_project_texts.apply_async((job.pk,), connection=broker)
        return job

    def embed_in(process: int, *, last: bool = False) -> None:
        """Embed a project's texts in the worker and check what the pool process stored and kept (``last``: its last
        task, after which it exits)."""
        number = Project.objects.count()
        project = Project.objects.create(name=f"Worker {number}", slug=f"worker-{number}")
        job = send(project, [("batch_1.json", EXAMPLE)])
        wait(f"job {job.pk} done", lambda: Job.objects.get(pk=job.pk).status == Job.Status.DONE, worker, log, 240)
        assert vectors(project) == expected
        assert pool(worker) == [process] or last
        if not last:
            assert private_mib(process) < OWN_COPY_MIB, f"pool process {process} loaded a model of its own"

    (first,) = wait("a pool process", lambda: pool(worker), worker, log)
    embed_in(first)
    embed_in(first, last=True)  # its second task: billiard replaces it (--max-tasks-per-child=2)
    (second,) = wait("a new pool process after two tasks", lambda: [p for p in pool(worker) if p != first], worker,
                     log)
    embed_in(second)
    # A pool process killed while it embeds (a crash, the kernel's OOM killer): billiard forks another. (One
    # killed while it waits for a task leaves the pool's queue lock held, and this worker, on the embedded broker,
    # runs nothing more, whichever way the model is loaded: docs/performance.md, section 11.)
    source = " ".join(f"Report {i} said the bridge reopened after {i % 40 + 2} weeks of repairs." for i in range(3000))
    line = json.dumps({"passage_id": "long", "source": source, "summary": "The bridge reopened.", "generator": "m"})
    long = send(Project.objects.create(name="Long", slug="long"), [("long.jsonl", line.encode())])
    wait("the long job starts", lambda: Job.objects.get(pk=long.pk).status == Job.Status.RUNNING, worker, log)
    os.kill(second, signal.SIGKILL)
    assert Job.objects.get(pk=long.pk).status == Job.Status.RUNNING, "the long job ended before the kill"
    (third,) = wait("a new pool process after a kill", lambda: [p for p in pool(worker) if p != second], worker, log)
    embed_in(third)
    text = log.read_text()
    assert "ERROR/ForkPoolWorker" not in text and "TOKENIZERS_PARALLELISM" not in text, text
