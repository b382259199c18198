"""A rubric judge run of 1,000 samples at concurrency 32 against one call at a time (the paper's way).

The endpoint is the tests' OpenAI-compatible loopback server
(tests/judging/llm_server.py), run in a process of its own so its CPU is not
counted as ours, answering every call after a fixed ``--delay`` (500 ms). The
run goes through the same service as the Celery task and the `judge` command
(judging.services.runs.execute_run), with a real database (a SQLite file, or
PostgreSQL with DATABASE_URL).

Measured, in one run of this script:

- the concurrent run: ``--samples`` samples at ``--concurrency``, wall time;
- the sequential baseline: the same kind of run at concurrency 1 over
  ``--sequential-calls`` other samples (1,000 calls at 0.5 s would take over
  8 minutes), its wall time per call extrapolated to ``--samples`` calls;
- the app's own CPU per call: this process's CPU time (time.process_time: every
  thread, the database client included, the server excluded) over the
  concurrent run, divided by the calls;
- a repeated run of the concurrent judge over the same samples: its endpoint
  calls (target 0: the call cache answers) and time.

Targets (issue 10): concurrent >= 20x faster than sequential; < 5 ms of CPU a call; 0 calls when repeated.

    .venv/bin/python bench/bench_judge_run.py [--samples 1000] [--concurrency 32] [--sequential-calls 40]
    scripts/with-postgres.sh .venv/bin/python bench/bench_judge_run.py
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, CpuMonitor, database_version, machine, start_django, yes_no  # noqa: E402

TARGET_RATIO = 20.0
TARGET_CPU_MS = 5.0

# The endpoint's process: the loopback server with a script that holds each answer `delay` seconds and counts the
# calls in flight; it prints its base URL, then answers "stats" lines on stdin with a JSON line.
SERVER_CODE = """
import json, sys, threading, time
sys.path.insert(0, {root!r})
from tests.judging.llm_server import LoopbackLLM, Reply

lock = threading.Lock()
flying = {{"now": 0, "max": 0}}

def script(body, attempt):
    with lock:
        flying["now"] += 1
        flying["max"] = max(flying["max"], flying["now"])
    time.sleep({delay})
    with lock:
        flying["now"] -= 1
    return Reply(content='{{"reasoning": "Every figure in the output is in the source.", "score": 4}}')

with LoopbackLLM(script) as server:
    print(server.base_url, flush=True)
    for line in sys.stdin:
        if line.strip() == "stats":
            with lock:
                print(json.dumps({{"calls": server.chat_calls, "max_in_flight": flying["max"]}}), flush=True)
                flying["max"] = 0
        elif line.strip() == "quit":
            break
"""


class EndpointProcess:
    def __init__(self, delay: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER_CODE.format(root=str(ROOT), delay=delay)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().strip()
        if not self.base_url.startswith("http"):
            raise SystemExit(f"bench: the loopback server did not start ({self.base_url!r})")

    def stats(self) -> dict[str, int]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("stats\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.write("quit\n")
            self.process.stdin.flush()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def timed_run(project: Any, judge: Any, **scope: Any) -> tuple[Any, float, float]:
    """Start and execute a run in the foreground; (run, wall seconds, this process's CPU seconds)."""
    from judging.services import runs

    cpu = time.process_time()
    wall = time.perf_counter()
    run = runs.execute_run(runs.start_run(project, judge, queue=False, **scope).pk)
    return run, time.perf_counter() - wall, time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--sequential-calls", type=int, default=40)
    parser.add_argument("--delay", type=float, default=0.5, help="seconds the endpoint takes to answer")
    options = parser.parse_args()

    env = start_django("judge_run")
    from annotate.models import Project
    from judging.services.judges import create_judge
    from tests.judging.run_factories import add_samples

    endpoint = EndpointProcess(options.delay)
    try:
        project = Project.objects.create(name="Bench judge", slug="bench-judge")
        add_samples(project, options.samples, batch_name="concurrent")
        sequential_samples = add_samples(project, options.sequential_calls, batch_name="sequential", first=100_000)
        fast = create_judge(project, name="bench-concurrent", kind="rubric", base_url=endpoint.base_url,
                            model="test-model", concurrency=options.concurrency)
        one_at_a_time = create_judge(project, name="bench-sequential", kind="rubric", base_url=endpoint.base_url,
                                     model="test-model", concurrency=1)
        print(f"machine: {machine()}; database: {database_version()} ({env.vendor})")
        print(f"endpoint: loopback server in its own process, {options.delay * 1000:.0f} ms an answer")

        with CpuMonitor() as monitor:
            sequential, sequential_wall, _ = timed_run(project, one_at_a_time, scope="batch",
                                                       batch=sequential_samples[0].batch)
        sequential_stats = endpoint.stats()
        print(monitor.describe())
        with CpuMonitor() as monitor:
            concurrent, concurrent_wall, concurrent_cpu = timed_run(project, fast, scope="batch",
                                                                    batch=project.batches.get(name="concurrent"))
        concurrent_stats = endpoint.stats()
        print(monitor.describe())
        repeated, repeated_wall, repeated_cpu = timed_run(project, fast, scope="batch",
                                                          batch=project.batches.get(name="concurrent"))
        repeated_stats = endpoint.stats()
    finally:
        endpoint.close()

    for run in (sequential, concurrent, repeated):
        if run.status != "done" or run.failed:
            raise SystemExit(f"bench: run {run.pk} ended {run.status} with {run.failed} failed: {run.error}")
    per_call = sequential_wall / sequential.calls
    extrapolated = per_call * options.samples
    ratio = extrapolated / concurrent_wall
    cpu_ms = 1000 * concurrent_cpu / concurrent.calls
    repeated_calls = repeated_stats["calls"] - concurrent_stats["calls"]

    print()
    print("| run | items | endpoint calls | cached | wall s | per item ms | CPU ms per item | max in flight |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| sequential, concurrency 1 (measured on {sequential.done} samples) | {sequential.done} | "
          f"{sequential.calls} | {sequential.cached} | {sequential_wall:.2f} | {1000 * per_call:.1f} | – | "
          f"{sequential_stats['max_in_flight']} |")
    print(f"| sequential, extrapolated to {options.samples} samples | {options.samples} | {options.samples} | 0 | "
          f"{extrapolated:.1f} | {1000 * per_call:.1f} | – | 1 |")
    print(f"| **concurrent, concurrency {options.concurrency}** | {concurrent.done} | {concurrent.calls} | "
          f"{concurrent.cached} | {concurrent_wall:.2f} | {1000 * concurrent_wall / concurrent.done:.1f} | "
          f"{cpu_ms:.2f} | {concurrent_stats['max_in_flight']} |")
    print(f"| repeated (same judge, same samples) | {repeated.done} | {repeated.calls} "
          f"(server saw {repeated_calls}) | {repeated.cached} | {repeated_wall:.2f} | "
          f"{1000 * repeated_wall / repeated.done:.2f} | {1000 * repeated_cpu / repeated.done:.2f} | – |")
    print()
    print(f"sequential per call {1000 * per_call:.1f} ms (endpoint {options.delay * 1000:.0f} ms + client and "
          f"database); the sequential figure for {options.samples} samples is extrapolated from "
          f"{sequential.calls} calls")
    print(f"speed-up concurrent vs sequential: {ratio:.1f}x (target >= {TARGET_RATIO:g}x): "
          f"{yes_no(ratio >= TARGET_RATIO)}")
    print(f"app CPU per call (this process, server excluded): {cpu_ms:.2f} ms (target < {TARGET_CPU_MS:g} ms): "
          f"{yes_no(cpu_ms < TARGET_CPU_MS)}")
    print(f"repeated run endpoint calls: {repeated.calls} counted by the run, {repeated_calls} seen by the server "
          f"(target 0): {yes_no(repeated.calls == 0 and repeated_calls == 0)}")
    met = ratio >= TARGET_RATIO and cpu_ms < TARGET_CPU_MS and repeated.calls == 0 and repeated_calls == 0
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
