"""Benchmark: gunicorn's memory and first requests, each worker with its own embedding model against workers sharing
the master's copy (preload_app, config/gunicorn.conf.py).

Starts gunicorn as the README does (gthread, ``--workers 4 --threads 4`` by default) on a free loopback port, in two
ways, alternating run by run:

- **own copy**: no ``-c config/gunicorn.conf.py``: each worker imports the app and loads the model itself, in its
  warm-up thread (what FaithLab did before preload_app);
- **shared**: with ``-c config/gunicorn.conf.py``: the master loads the model before it forks the workers.

For each run it prints: when the port first answered, when every worker had answered a selection (the access log
names the worker), how many selections were answered 503 "loading" before that, how long the first selections took;
then, after ``--requests`` more selections (each on a new connection, so they spread over the workers), the memory of
the master and of each worker from /proc/<pid>/smaps_rollup: RSS, PSS (shared pages split between the processes that
map them), private (pages no other process maps); and how long a SIGTERM stop took. Every answer is checked against
the one Django's test client gets in this process. Medians over ``--repeats`` runs of each.

    .venv/bin/python bench/bench_gunicorn_memory.py [--workers 4] [--threads 4] [--repeats 3] [--requests 200]

SQLite in a temporary folder by default; PostgreSQL when DATABASE_URL is set (a throwaway database on that server).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
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
from gunicorn_server import free_port  # noqa: E402

MODES = ("own copy", "shared")
SENTENCES = 40


@dataclass
class Run:
    mode: str
    listen_s: float = 0.0
    ready_s: float = float("nan")  # every worker has answered a selection
    loading_503: int = 0
    first_ms: list[float] = field(default_factory=list)  # the first selections answered 200, in order
    wrong: int = 0
    master: dict[str, int] = field(default_factory=dict)
    workers: list[dict[str, int]] = field(default_factory=list)
    master_threads: int = 0
    stop_s: float = 0.0


def request(port: int, method: str, path: str, token: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        connection.request(method, path, body=json.dumps(body) if body else None, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def answering_workers(access_log: Path) -> set[int]:
    """Worker pids that answered a selection with 200, from the access log ("<pid> <status> <path>")."""
    found = set()
    for line in access_log.read_text().splitlines():
        pid, status, path = line.split()[:3]
        if status == "200" and path.endswith("/similarity/"):
            found.add(int(pid.strip("<>")))
    return found


def one_run(mode: str, options: argparse.Namespace, setup: dict[str, Any], folder: Path, number: int) -> Run:
    run = Run(mode)
    port = setup["port"]
    access_log = folder / f"access-{number}.log"
    command = [str(Path(sys.executable).with_name("gunicorn"))]
    if mode == "shared":
        command += ["-c", "config/gunicorn.conf.py"]
    command += [
        "config.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", str(options.workers), "--threads",
        str(options.threads), "--worker-class", "gthread", "--log-level", "warning", "--access-logfile",
        str(access_log), "--access-logformat", "%(p)s %(s)s %(U)s",
    ]
    env = dict(os.environ, EMBEDDING_WARMUP="true")
    with (folder / f"gunicorn-{number}.log").open("wb") as log:
        started = time.monotonic()
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    try:
        while True:
            if server.poll() is not None:
                raise SystemExit(f"bench: gunicorn exited with {server.returncode}; see {log.name}")
            try:
                request(port, "GET", "/accounts/login/", setup["token"])
                break
            except OSError:
                time.sleep(0.05)
        run.listen_s = time.monotonic() - started
        selections = setup["selections"]
        sample_id = setup["sample_id"]
        asked = 0

        def ask() -> int:
            nonlocal asked
            start, end = selections[asked % len(selections)]
            answer = setup["answers"][asked % len(selections)]
            asked += 1
            began = time.monotonic()
            status, body = request(port, "POST", f"/api/samples/{sample_id}/similarity/", setup["token"],
                                   {"side": "summary", "start": start, "end": end})
            if status == 200:
                if len(run.first_ms) < 5:
                    run.first_ms.append((time.monotonic() - began) * 1000)
                if json.loads(body) != answer:
                    run.wrong += 1
            elif status == 503:
                run.loading_503 += 1
                time.sleep(0.2)  # the page waits for Retry-After: 1; a shorter wait times readiness closer
            else:
                raise SystemExit(f"bench: similarity answered {status}: {body[:300]!r}")
            return status

        deadline = time.monotonic() + 300
        while len(answering_workers(access_log)) < options.workers:
            ask()
            if time.monotonic() > deadline:
                raise SystemExit("bench: not every worker answered a selection within 300 s")
        run.ready_s = time.monotonic() - started
        for _ in range(options.requests):
            ask()
        workers = children(server.pid)
        run.master = memory(server.pid)
        run.workers = [memory(pid) for pid in workers]
        run.master_threads = len(list(Path(f"/proc/{server.pid}/task").iterdir()))
    finally:
        began = time.monotonic()
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
        run.stop_s = time.monotonic() - began
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each mode, alternating")
    parser.add_argument("--requests", type=int, default=200, help="selections after every worker answered")
    parser.add_argument("--seed", type=int, default=7)
    options = parser.parse_args()
    env = start_django("gunicorn_memory")
    try:
        return run_all(options, env.data_dir)
    finally:
        env.close()


def prepare(options: argparse.Namespace) -> dict[str, Any]:
    """A 40-sentence passage with a 4-sentence summary, embedded; an annotator's token; the reference answers."""
    from django.contrib.auth import get_user_model
    from django.db import connections
    from django.test import Client

    from annotate.models import Assignment, Membership, Project, Sample
    from annotate.services import embedding
    from annotate.services.ingest import import_batches, parse_samples_jsonl
    from annotate.services.tokens import create_api_token

    rng = random.Random(options.seed)
    line = {"passage_id": "p", "source": paragraph(rng, SENTENCES), "summary": paragraph(rng, 4),
            "generator": "bench/model", "sample_id": "s"}
    project = Project.objects.create(name="gunicorn bench", slug="gunicorn-bench")
    user = get_user_model().objects.create_user(username="annotator", password="unused-password-1")  # noqa: S106
    Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    report = import_batches(project, parse_samples_jsonl(json.dumps(line), "bench.jsonl"))
    for batch in report.batches:
        Assignment.objects.create(batch=batch, annotator=user)
    assert report.job is not None
    embedding.run_embedding_job(report.job.pk)
    sample = Sample.objects.get()
    words = [(i, i + len(word)) for i, word in _words(sample.summary)]
    selections = [(words[first][0], words[min(len(words) - 1, first + rng.randint(1, 6))][1])
                  for first in (rng.randrange(len(words)) for _ in range(20))]
    client = Client()
    client.force_login(user)
    answers = []
    for start, end in selections:
        response = client.post(f"/api/samples/{sample.pk}/similarity/", {"side": "summary", "start": start,
                               "end": end}, content_type="application/json")
        assert response.status_code == 200, response.content
        answers.append(response.json())
    token = create_api_token(user, "bench")[1]
    connections.close_all()
    return {"port": free_port(), "token": token, "sample_id": sample.pk, "selections": selections,
            "answers": answers}


def _words(text: str) -> list[tuple[int, str]]:
    found, at = [], 0
    for word in text.split(" "):
        found.append((at, word))
        at += len(word) + 1
    return found


def run_all(options: argparse.Namespace, folder: Path) -> int:
    setup = prepare(options)
    print(f"machine: {machine()}; database: {database_version()}; gunicorn --workers {options.workers} "
          f"--threads {options.threads} --worker-class gthread; {options.requests} selections after every worker "
          f"answered one; {options.repeats} runs of each, alternating")
    runs: dict[str, list[Run]] = {mode: [] for mode in MODES}
    with CpuMonitor() as monitor:
        for number in range(options.repeats):
            for mode in MODES if number % 2 == 0 else MODES[::-1]:
                run = one_run(mode, options, setup, folder, len(runs["own copy"]) + len(runs["shared"]))
                runs[mode].append(run)
                workers_pss = [w["pss"] for w in run.workers]
                print(f"  {mode:9s} port {run.listen_s:5.1f} s, every worker answered {run.ready_s:5.1f} s, "
                      f"{run.loading_503:3d} x 503, first 200s {', '.join(f'{ms:.0f}' for ms in run.first_ms)} ms; "
                      f"master RSS {run.master['rss']} PSS {run.master['pss']} MiB ({run.master_threads} threads), "
                      f"workers PSS {workers_pss} private {[w['private'] for w in run.workers]} MiB; "
                      f"total PSS {run.master['pss'] + sum(workers_pss)} MiB; stop {run.stop_s:.1f} s; "
                      f"wrong answers {run.wrong}")
    print(f"\nmedians over {options.repeats} runs each ({options.workers} workers):")
    print(f"{'mode':9s} {'port s':>6} {'ready s':>7} {'503s':>5} {'1st ms':>7} {'2-5th ms':>8} {'master':>13} "
          f"{'worker':>13} {'w. private':>10} {'total PSS':>9} {'stop s':>6}")
    print(f"{'':9s} {'':>6} {'':>7} {'':>5} {'':>7} {'':>8} {'RSS/PSS MiB':>13} {'RSS/PSS MiB':>13} {'MiB':>10} "
          f"{'MiB':>9}")
    wrong = 0
    for mode in MODES:
        done = runs[mode]
        wrong += sum(run.wrong for run in done)
        worker_rss = median([median([w["rss"] for w in run.workers]) for run in done])
        worker_pss = median([median([w["pss"] for w in run.workers]) for run in done])
        private = median([median([w["private"] for w in run.workers]) for run in done])
        total = median([run.master["pss"] + sum(w["pss"] for w in run.workers) for run in done])
        print(f"{mode:9s} {median([r.listen_s for r in done]):6.1f} {median([r.ready_s for r in done]):7.1f} "
              f"{median([r.loading_503 for r in done]):5.0f} {median([r.first_ms[0] for r in done]):7.0f} "
              f"{median([median(r.first_ms[1:]) for r in done]):8.0f} "
              f"{median([r.master['rss'] for r in done]):6.0f}/{median([r.master['pss'] for r in done]):<6.0f} "
              f"{worker_rss:6.0f}/{worker_pss:<6.0f} {private:10.0f} {total:9.0f} "
              f"{median([r.stop_s for r in done]):6.1f}")
        shared_part = total - options.workers * private
        print(f"{'':9s} -> about {shared_part:.0f} MiB once and {private:.0f} MiB a worker: "
              + ", ".join(f"{n} workers ~{shared_part + n * private:.0f} MiB" for n in (1, 2, 4, 8)))
    print(monitor.describe())
    if wrong:
        print(f"FAILED: {wrong} answers differed from the test client's")
        return 1
    print("every answer matched the test client's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
