"""Benchmark: the Celery worker's memory, each pool process loading its own embedding model against the pool sharing
the main process's copy (config/celery.py, EMBEDDING_WARMUP).

Starts the README's worker (``celery -A config worker``, prefork pool, ``--concurrency`` 2 and 4 by default) on the
embedded filesystem broker, in two ways, alternating run by run:

- **own copy** (``EMBEDDING_WARMUP=false``): each pool process loads the model at its first embedding task (what
  FaithLab's worker always did before);
- **shared** (``EMBEDDING_WARMUP=true``, the default): the worker's main process loads the weights before it forks
  its pool, and each pool process warms up after the fork.

For each run it prints: when the worker logged "ready"; the memory of the main process and of each pool process
(/proc/<pid>/smaps_rollup: RSS, PSS, private) while idle, before any task (what a worker that never embeds, one
that runs judge runs only, takes); how long until every pool process had run an embedding task (projects are imported
one per pool process, each job in small slices, more until every pool process has run one) and how long the first
import took; the memory again after that; and how long a SIGTERM stop took. The vectors the worker stored are
compared with the ones this process computes with the same model. Medians over ``--repeats`` runs of each.

    .venv/bin/python bench/bench_worker_memory.py [--concurrency 2 4] [--repeats 3]

SQLite in a temporary folder by default; PostgreSQL when DATABASE_URL is set (a throwaway database on that server).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    ROOT,
    CpuMonitor,
    children,
    database_version,
    machine,
    median,
    memory,
    paragraph,
    start_django,
)

MODES = ("own copy", "shared")
SENTENCES = 60  # each project: one passage of this many sentences and four 4-sentence summaries
SLICE_SENTENCES = 20  # EMBEDDING_SLICE_SENTENCES for the worker: a project's job is a few tasks
EMBEDDED = re.compile(r"/(ForkPoolWorker-\d+)\] Task annotate\.tasks\.embed_project_texts\[[^]]+\] succeeded")


@dataclass
class Run:
    mode: str
    concurrency: int
    ready_s: float = 0.0
    first_job_s: float = 0.0  # the first import's embedding job, from queued to done
    every_child_s: float = 0.0  # until every pool process had run an embedding task
    imports: int = 0
    parent_idle: dict[str, int] = field(default_factory=dict)
    children_idle: list[dict[str, int]] = field(default_factory=list)
    parent: dict[str, int] = field(default_factory=dict)
    children: list[dict[str, int]] = field(default_factory=list)
    parent_threads: int = 0
    max_diff: float = 0.0
    vectors: list[bytes] = field(default_factory=list)  # each project's stored vectors, in import order
    stop_s: float = 0.0

    def total(self, idle: bool = False) -> int:
        parent, children = (self.parent_idle, self.children_idle) if idle else (self.parent, self.children)
        return parent["pss"] + sum(child["pss"] for child in children)


def import_project(rng: random.Random, number: int) -> Any:
    """A project with one passage and four summaries; importing it queues its embedding job (on commit)."""
    from annotate.models import Project
    from annotate.services.ingest import import_batches, parse_samples_jsonl

    source = paragraph(rng, SENTENCES)
    lines = [json.dumps({"passage_id": "p", "source": source, "summary": paragraph(rng, 4), "generator": "bench/m",
                         "sample_id": f"s{i}"}) for i in range(4)]
    project = Project.objects.create(name=f"worker bench {number}", slug=f"worker-bench-{number}")
    report = import_batches(project, parse_samples_jsonl("\n".join(lines), "bench.jsonl"))
    assert report.job is not None
    return report.job


def wait_done(jobs: list[Any], worker: subprocess.Popen, log: Path, seconds: float = 600) -> None:
    from annotate.models import Job

    deadline = time.monotonic() + seconds
    ids = [job.pk for job in jobs]
    while True:
        statuses = set(Job.objects.filter(pk__in=ids).values_list("status", flat=True))
        if statuses == {Job.Status.DONE}:
            return
        if Job.Status.FAILED in statuses:
            raise SystemExit(f"bench: an embedding job failed: {list(Job.objects.filter(pk__in=ids).values('error'))}")
        if worker.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"bench: the worker exited or the jobs did not end; see {log}")
        time.sleep(0.1)


def check_vectors(run: Run, projects: list[int]) -> None:
    """Keep each project's stored vectors, and the largest difference between a vector the worker stored and the one
    this process computes for its sentence (a text at a time: the worker encodes several texts a batch, and padding
    moves the last bits of float32, about 2e-7)."""
    import numpy as np

    from annotate import embedder
    from annotate.models import Passage, Sample

    for project in projects:
        stored_here = []
        for model_class, text_of in ((Passage, "text"), (Sample, "summary")):
            for row in model_class.objects.filter(project_id=project).order_by("pk"):
                text = getattr(row, text_of)
                stored = row.sentence_vectors()
                assert stored is not None and len(stored) == len(row.sentences), row
                here = embedder.embed([text[s:e] for s, e in row.sentences])
                run.max_diff = max(run.max_diff, float(np.abs(stored - here).max()))
                stored_here.append(bytes(row.embeddings))
        run.vectors.append(b"".join(stored_here))


def one_run(mode: str, concurrency: int, folder: Path, rng: random.Random, number: int) -> Run:
    from django.db import connections

    run = Run(mode, concurrency)
    log = folder / f"worker-{number}.log"
    env = dict(os.environ, EMBEDDING_WARMUP="true" if mode == "shared" else "false",
               EMBEDDING_SLICE_SENTENCES=str(SLICE_SENTENCES))
    command = [str(Path(sys.executable).with_name("celery")), "-A", "config", "worker", "--loglevel=info",
               f"--concurrency={concurrency}", "--without-heartbeat", "--without-gossip", "--without-mingle"]
    connections.close_all()
    with log.open("wb") as out:
        started = time.monotonic()
        worker = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    projects: list[int] = []
    try:
        while " ready." not in log.read_text():
            if worker.poll() is not None or time.monotonic() - started > 300:
                raise SystemExit(f"bench: the worker exited or was not ready within 300 s; see {log}")
            time.sleep(0.05)
        run.ready_s = time.monotonic() - started
        time.sleep(2)  # the pool processes' warm-up, if any
        pool = children(worker.pid)
        assert len(pool) == concurrency, pool
        run.parent_idle = memory(worker.pid)
        run.children_idle = [memory(pid) for pid in pool]
        queued = time.monotonic()
        while len(set(EMBEDDED.findall(log.read_text()))) < concurrency:
            if run.imports >= 6 * concurrency:
                raise SystemExit(f"bench: not every pool process ran an embedding task; see {log}")
            jobs = [import_project(rng, number * 100 + run.imports + i) for i in range(concurrency)]
            run.imports += concurrency
            projects += [job.project_id for job in jobs]
            wait_done(jobs, worker, log)
            if not run.first_job_s:
                run.first_job_s = time.monotonic() - queued
        run.every_child_s = time.monotonic() - queued
        assert children(worker.pid) == pool, "a pool process was replaced"
        time.sleep(1)
        run.parent = memory(worker.pid)
        run.children = [memory(pid) for pid in pool]
        run.parent_threads = len(list(Path(f"/proc/{worker.pid}/task").iterdir()))
    finally:
        # SIGTERM to the main process only, which stops its pool. Sent to every process of the group at once (as
        # systemd's default KillMode=control-group does), 5 of 12 stops hung until the SIGKILL below, either way.
        began = time.monotonic()
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(10)
        run.stop_s = time.monotonic() - began
    check_vectors(run, projects)
    return run


def describe(run: Run) -> str:
    idle = [c["pss"] for c in run.children_idle]
    after = [c["pss"] for c in run.children]
    return (f"  {run.mode:9s} x{run.concurrency}: ready {run.ready_s:5.1f} s; idle: main RSS/PSS "
            f"{run.parent_idle['rss']}/{run.parent_idle['pss']}, pool PSS {idle} MiB, total {run.total(True)} MiB; "
            f"first job {run.first_job_s:5.1f} s, every process embedded {run.every_child_s:5.1f} s "
            f"({run.imports} imports); after: main RSS/PSS {run.parent['rss']}/{run.parent['pss']} MiB "
            f"({run.parent_threads} threads), pool PSS {after} private {[c['private'] for c in run.children]} MiB, "
            f"total {run.total()} MiB; vectors max diff {run.max_diff:.2g}; stop {run.stop_s:.1f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each mode and concurrency, alternating")
    parser.add_argument("--seed", type=int, default=7)
    options = parser.parse_args()
    env = start_django("worker_memory")
    try:
        return run_all(options, env.data_dir)
    finally:
        env.close()


def run_all(options: argparse.Namespace, folder: Path) -> int:
    from annotate import embedder

    embedder.get_model()  # this process's vectors, to compare the worker's with
    print(f"machine: {machine()}; database: {database_version()}; celery worker, prefork pool, filesystem broker; "
          f"{options.repeats} runs of each, alternating")
    runs: dict[tuple[str, int], list[Run]] = {}
    number = 0
    different = 0  # projects whose vectors differ between the two ways
    with CpuMonitor() as monitor:
        for concurrency in options.concurrency:
            for repeat in range(options.repeats):
                for mode in MODES if repeat % 2 == 0 else MODES[::-1]:
                    number += 1
                    # The same texts for both ways: their vectors must be the same bytes.
                    rng = random.Random(options.seed * 1000 + concurrency * 100 + repeat)
                    run = one_run(mode, concurrency, folder, rng, number)
                    runs.setdefault((mode, concurrency), []).append(run)
                    print(describe(run), flush=True)
                if len(runs[("own copy", concurrency)]) == len(runs[("shared", concurrency)]):
                    own, shared = runs[("own copy", concurrency)][-1], runs[("shared", concurrency)][-1]
                    different += sum(a != b for a, b in zip(own.vectors, shared.vectors, strict=False))
    print(f"\nmedians over {options.repeats} runs each, MiB and seconds:")
    print(f"{'mode':9s} {'conc.':>5} {'ready':>5} | {'idle main':>9} {'idle pool':>9} {'idle total':>10} | "
          f"{'1st job':>7} {'all ran':>7} | {'main':>9} {'each pool':>9} {'private':>7} {'total':>6} | {'stop':>4}")
    print(f"{'':9s} {'':>5} {'':>5} | {'RSS/PSS':>9} {'PSS':>9} {'PSS':>10} | {'':>7} {'':>7} | {'RSS/PSS':>9} "
          f"{'PSS':>9} {'':>7} {'PSS':>6} |")
    worst = 0.0
    for (mode, concurrency), done in runs.items():
        worst = max([worst] + [run.max_diff for run in done])
        private = median([median([c["private"] for c in run.children]) for run in done])
        total = median([run.total() for run in done])
        print(f"{mode:9s} {concurrency:5d} {median([r.ready_s for r in done]):5.1f} | "
              f"{median([r.parent_idle['rss'] for r in done]):4.0f}/{median([r.parent_idle['pss'] for r in done]):<4.0f} "
              f"{median([median([c['pss'] for c in r.children_idle]) for r in done]):9.0f} "
              f"{median([r.total(True) for r in done]):10.0f} | {median([r.first_job_s for r in done]):7.1f} "
              f"{median([r.every_child_s for r in done]):7.1f} | "
              f"{median([r.parent['rss'] for r in done]):4.0f}/{median([r.parent['pss'] for r in done]):<4.0f} "
              f"{median([median([c['pss'] for c in r.children]) for r in done]):9.0f} {private:7.0f} {total:6.0f} | "
              f"{median([r.stop_s for r in done]):4.1f}")
    print(monitor.describe())
    print(f"largest difference between a vector the worker stored and this process's, a text at a time: {worst:.2g}")
    if worst > 1e-6 or different:
        print(f"FAILED: the worker's vectors differ from this process's, or {different} projects' vectors differ "
              "between the two ways")
        return 1
    print("each project's vectors were the same bytes both ways")
    return 0


if __name__ == "__main__":
    sys.exit(main())
