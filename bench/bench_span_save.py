"""Benchmark: 20 annotators saving spans at once through a real gunicorn server on PostgreSQL.

Starts gunicorn (``config.wsgi``, gthread workers, DEBUG=false) on 127.0.0.1
against a throwaway database, creates annotators with API tokens assigned to a
50-sample batch, then runs one client thread per annotator: 70% POST
/api/spans/ (create), 30% PATCH /api/spans/<id>/ of one of their own spans with
the version they last read. Every request's latency is recorded. Afterwards
the rows in the database are checked against the responses: every 201 has its
row (none lost), no create made two rows (none duplicated; each create carries
a unique tag in its note), and every span holds the version and labels of its
last acknowledged PATCH (no lost update). Errors are non-2xx answers other
than 409 and transport failures.

Before the server starts, the cost of one save is measured in-process
(django.test.Client, token auth): queries per request and CPU per request.

Phases per server setting, each checked row by row:

- warm-up (20 annotators, not measured);
- baseline: 1 annotator saving in a closed loop;
- **target**: 20 annotators, each starting a save on average every
  ``--pace-ms`` (500 ms: ~40 saves/s in all, at least twice as fast as people
  annotate, who save at most about once a second). Target: p95 <= 100 ms,
  zero errors, zero lost, zero duplicated;
- **capacity**: the same 20 annotators in a closed loop (each sends its next
  save as soon as the last is answered). This measures the most the machine
  serves; its latency follows from Little's law (mean latency = clients /
  throughput), so its p95 says how fast the server is, not what people see.

    scripts/with-postgres.sh .venv/bin/python bench/bench_span_save.py \
        [--seconds 60] [--baseline-seconds 20] [--servers 4x4,2x10] [--pace-ms 500]

``--servers`` lists gunicorn settings as WORKERSxTHREADS. Exit status 1 when
any request failed or any row was lost, duplicated or overwritten, in any phase.

The client threads and the row checks are in ``span_load.py``, the gunicorn runner in
``gunicorn_server.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    CpuMonitor,
    database_version,
    is_postgres,
    machine,
    paragraph,
    start_django,
    summary,
    yes_no,
)
from gunicorn_server import Server  # noqa: E402
from span_load import (  # noqa: E402
    CREATE_SHARE,
    LABEL_CHOICES,
    Annotator,
    Check,
    check_rows,
    fresh_offsets,
    make_annotators,
    run_clients,
)

TARGET_P95_MS = 100.0


def postmaster_pid() -> int | None:
    from django.db import connection

    try:
        with connection.cursor() as cursor:
            cursor.execute("SHOW data_directory")
            data_directory = cursor.fetchone()[0]
        return int((Path(data_directory) / "postmaster.pid").read_text().split()[0])
    except Exception:  # noqa: BLE001  (only used to attribute CPU; not essential)
        return None


@dataclass
class Phase:
    name: str
    clients: int
    seconds: float
    stats: dict[str, dict[str, float]]
    throughput: float
    statuses: Counter[int]
    errors: int
    conflicts: int
    check: Check
    failures: list[str]
    cpu: str = ""
    per_client: list[int] = field(default_factory=list)
    cpu_ms: dict[str, float] = field(default_factory=dict)  # CPU per request by part (clients, gunicorn, PostgreSQL)
    contention: str = ""  # the CpuMonitor line: how busy the machine was and how much of it was not us

    @property
    def bad(self) -> int:
        """Failed requests and rows that do not match what the clients were told."""
        c = self.check
        return self.errors + c.lost + c.duplicated + c.unacknowledged + c.lost_updates + c.per_annotator_mismatch


def measure_phase(name: str, annotators: list[Annotator], server: Server, samples: list[tuple[int, int]],
                  seconds: float, warmup: float, seed: int, extra_roots: list[int], pace: float = 0.0) -> Phase:
    assert server.process is not None
    parts = {"gunicorn": [server.process.pid], "PostgreSQL": extra_roots}
    client_cpu = time.process_time()
    with CpuMonitor(extra_roots, parts) as monitor:
        outcomes, began, ended = run_clients(annotators, server.port, samples, seconds, seed, pace)
    client_cpu = time.process_time() - client_cpu
    measured_from = began + warmup
    records = [record for outcome in outcomes for record in outcome.records]
    kept = [record for record in records if record[0] >= measured_from]
    window = max(1e-9, ended - measured_from)
    statuses = Counter(status for _, _, _, status in records)
    errors = sum(count for status, count in statuses.items() if not (200 <= status < 300 or status == 409))
    stats = {
        "all": summary([took for _, took, _, _ in kept]),
        "create": summary([took for _, took, kind, _ in kept if kind == "create"]),
        "patch": summary([took for _, took, kind, _ in kept if kind == "patch"]),
    }
    cpu_ms = {name: seconds * 1000 / max(1, len(records))
              for name, seconds in {"clients": client_cpu, **monitor.part_seconds}.items()}
    return Phase(name=name, clients=len(annotators), seconds=seconds, stats=stats, throughput=len(kept) / window,
                 statuses=statuses, errors=errors, conflicts=statuses.get(409, 0), check=check_rows(outcomes),
                 failures=[failure for outcome in outcomes for failure in outcome.failures][:10],
                 per_client=sorted(len(outcome.records) for outcome in outcomes),
                 cpu=monitor.describe() + "\n    CPU per request: " + ", ".join(
                     f"{name} {ms:.2f} ms" for name, ms in cpu_ms.items()
                 ) + f" (total {sum(cpu_ms.values()):.2f} ms)",
                 cpu_ms=cpu_ms, contention=monitor.describe())


def print_phase(phase: Phase, baseline: Phase | None) -> None:
    all_stats = phase.stats["all"]
    print(f"  {phase.name}: {phase.clients} client(s) for {phase.seconds:.0f} s, "
          f"{sum(phase.statuses.values())} requests, statuses {dict(sorted(phase.statuses.items()))}")
    for kind in ("all", "create", "patch"):
        s = phase.stats[kind]
        print(f"    {kind:<7} n={s['n']:<6} p50 {s['p50']:7.2f} ms  p95 {s['p95']:7.2f} ms  p99 {s['p99']:7.2f} ms  "
              f"mean {s['mean']:7.2f} ms")
    line = f"    throughput {phase.throughput:.1f} req/s"
    if baseline is not None:
        base = baseline.stats["all"]
        line += (f"; vs 1-annotator baseline: p50 x{all_stats['p50'] / base['p50']:.2f}, "
                 f"p95 x{all_stats['p95'] / base['p95']:.2f}, throughput x{phase.throughput / baseline.throughput:.2f}")
    print(line)
    if len(phase.per_client) > 1:
        counts = phase.per_client
        print(f"    requests per annotator: min {counts[0]}, median {counts[len(counts) // 2]}, max {counts[-1]} "
              "(a wide spread means the server serves connections unevenly)")
    c = phase.check
    print(f"    errors {phase.errors}, expected 409s {phase.conflicts}; rows {c.rows} vs 201s {c.acknowledged}: "
          f"lost {c.lost}, duplicated {c.duplicated}, unacknowledged rows {c.unacknowledged}, "
          f"lost updates {c.lost_updates}, annotators whose row count != their 201s {c.per_annotator_mismatch}")
    for failure in phase.failures:
        print(f"    failure: {failure}")
    print(f"    {phase.cpu}")


def request_costs(annotator: Annotator, samples: list[tuple[int, int]], count: int, seed: int) -> dict[str, Any]:
    """Queries and CPU of one create and one PATCH, in-process through django.test.Client (token auth).

    This is the server's own work per save, without HTTP, gunicorn or other
    requests competing for the cores: the figure to compare between versions
    of the write path. CPU is the median over five rounds of ``count`` requests.
    """
    import statistics

    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    rng = random.Random(seed)
    client = Client(HTTP_AUTHORIZATION=f"Token {annotator.token}")
    mine: dict[int, int] = {}

    used: set[tuple[int, int, int]] = set()

    def save(kind: str) -> None:
        if kind == "create":
            sample_id, start, end = fresh_offsets(rng, samples, used)
            body: dict[str, Any] = {"sample": sample_id, "round": 1, "start": start, "end": end,
                                    "labels": ["Benign"]}
            response = client.post("/api/spans/", json.dumps(body), content_type="application/json")
            if response.status_code != 201:
                raise SystemExit(f"bench: in-process create answered {response.status_code}: {response.content[:200]!r}")
            saved = json.loads(response.content)
            mine[saved["id"]] = saved["version"]
        else:
            span_id = rng.choice(list(mine))
            body = {"version": mine[span_id], "labels": rng.choice(LABEL_CHOICES)}
            response = client.patch(f"/api/spans/{span_id}/", json.dumps(body), content_type="application/json")
            if response.status_code != 200:
                raise SystemExit(f"bench: in-process PATCH answered {response.status_code}: {response.content[:200]!r}")
            mine[span_id] = json.loads(response.content)["version"]

    for _ in range(50):  # warm-up: imports, connection, caches
        save("create")
        save("patch")
    costs: dict[str, Any] = {}
    for kind in ("create", "patch"):
        with CaptureQueriesContext(connection) as queries:
            save(kind)
        sql = [query["sql"] for query in queries.captured_queries]  # now: the next request clears the log
        rounds = []
        for _ in range(5):
            began = time.process_time()
            for _ in range(count):
                save(kind)
            rounds.append((time.process_time() - began) * 1000 / count)
        costs[kind] = {"queries": len(sql), "cpu_ms": statistics.median(rounds), "cpu_ms_min": min(rounds),
                       "sql": [statement[:60] for statement in sql]}
    return costs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0,
                        help="length of each 20-annotator phase (target and capacity)")
    parser.add_argument("--baseline-seconds", type=float, default=20.0, help="length of the 1-annotator run")
    parser.add_argument("--warmup-seconds", type=float, default=5.0, help="unmeasured load before the baseline")
    parser.add_argument("--skip-seconds", type=float, default=2.0,
                        help="leading seconds of each phase left out of the latency figures (still checked)")
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--servers", default="4x4", help="gunicorn settings WORKERSxTHREADS, comma-separated")
    parser.add_argument("--pace-ms", type=float, default=500.0,
                        help="target phase: each annotator starts a save on average this often (500: ~40 saves/s "
                             "for 20 annotators)")
    parser.add_argument("--cost-requests", type=int, default=200,
                        help="requests per round of the in-process cost measurement (0: skip it)")
    parser.add_argument("--seed", type=int, default=5)
    options = parser.parse_args()
    shortest = min(options.seconds, options.baseline_seconds)
    if options.skip_seconds >= shortest:
        parser.error(f"--skip-seconds {options.skip_seconds:g} leaves nothing to measure in a {shortest:g} s phase; "
                     "make it shorter than --seconds and --baseline-seconds")
    if options.pace_ms <= 0:
        parser.error("--pace-ms must be above 0 (the capacity phase is the closed loop)")
    if not is_postgres(os.environ.get("DATABASE_URL")):
        print("bench_span_save: needs PostgreSQL (DATABASE_URL is not a postgres:// URL). Run it as\n"
              "    scripts/with-postgres.sh .venv/bin/python bench/bench_span_save.py", file=sys.stderr)
        return 2
    servers = []
    for setting in options.servers.split(","):
        workers, _, threads = setting.strip().partition("x")
        if not (workers.isdigit() and threads.isdigit()):
            parser.error(f"--servers: {setting!r} is not WORKERSxTHREADS, e.g. 4x4")
        servers.append((int(workers), int(threads)))
    env = start_django("spans")
    try:
        return run(options, servers, env.data_dir)
    finally:
        env.close()


def run(options: argparse.Namespace, servers: list[tuple[int, int]], data_dir: Path) -> int:
    import torch
    from django.db import connections

    from annotate.models import Project
    from annotate.services import embedding
    from annotate.services.ingest import import_batches, parse_samples_jsonl

    rng = random.Random(options.seed)
    lines = [
        json.dumps({"passage_id": f"p{p}", "source": source, "summary": paragraph(rng, rng.randint(3, 5)),
                    "generator": f"org/model-{s}", "sample_id": f"{p}-{s}"})
        for p, source in enumerate(paragraph(rng, 20) for _ in range(5))
        for s in range(10)
    ]
    project = Project.objects.create(name="Span save bench", slug="span-save-bench")
    report = import_batches(project, parse_samples_jsonl("\n".join(lines), "spans.jsonl"))
    batch = report.batches[0]
    # Rows as in production: sentences split and embedded (a span save reads the sample and its passage).
    torch.set_num_threads(1)
    assert report.job is not None
    embedding.run_embedding_job(report.job.pk)
    samples = [(s.pk, len(s.summary)) for s in batch.samples.all()]
    pace = options.pace_ms / 1000
    offered = options.annotators / pace
    print(f"machine: {machine()}; database: {database_version()}")
    print(f"batch of {len(samples)} samples (5 passages of 20 sentences, embedded); clients: {options.annotators} "
          f"threads using http.client (keep-alive), {int(CREATE_SHARE * 100)}% create / "
          f"{100 - int(CREATE_SHARE * 100)}% PATCH of own spans")

    if options.cost_requests > 0:
        costs = request_costs(make_annotators("cost", 1, batch, project)[0], samples, options.cost_requests,
                              options.seed)
        print("\nrequest cost in-process (django.test.Client, token auth, DEBUG=false; no HTTP, no other load "
              "from this benchmark):")
        for kind, cost in costs.items():
            print(f"  {kind:<6} {cost['queries']} queries, CPU per request median {cost['cpu_ms']:.2f} ms "
                  f"(min {cost['cpu_ms_min']:.2f}) over 5 x {options.cost_requests}: " + " | ".join(cost["sql"]))
    extra_roots = [pid for pid in [postmaster_pid()] if pid]

    results: list[tuple[str, Phase, Phase, Phase]] = []
    for number, (workers, threads) in enumerate(servers):
        label = f"{workers}x{threads}"
        warm = make_annotators(f"s{number}-warm", options.annotators, batch, project)
        solo = make_annotators(f"s{number}-solo", 1, batch, project)
        paced = make_annotators(f"s{number}-paced", options.annotators, batch, project)
        crowd = make_annotators(f"s{number}-crowd", options.annotators, batch, project)
        connections.close_all()
        server = Server(workers, threads, data_dir)
        print(f"\ngunicorn config.wsgi --workers {workers} --threads {threads} --worker-class gthread "
              f"(DEBUG=false) on 127.0.0.1:{server.port}")
        try:
            server.start(warm[0].token)
            run_clients(warm, server.port, samples, options.warmup_seconds, options.seed)
            baseline = measure_phase("baseline (1 annotator, closed loop)", solo, server, samples,
                                     options.baseline_seconds, options.skip_seconds, options.seed + 1, extra_roots)
            print_phase(baseline, None)
            target = measure_phase(
                f"TARGET: {options.annotators} annotators, a save every ~{options.pace_ms:.0f} ms each "
                f"(~{offered:.0f} saves/s offered)", paced, server, samples, options.seconds, options.skip_seconds,
                options.seed + 3, extra_roots, pace)
            print_phase(target, baseline)
            capacity = measure_phase(f"CAPACITY: {options.annotators} annotators, closed loop (no pause)", crowd,
                                     server, samples, options.seconds, options.skip_seconds, options.seed + 2,
                                     extra_roots)
            print_phase(capacity, baseline)
            mean = capacity.stats["all"]["mean"]
            print(f"    Little's law: mean latency = clients / throughput = {options.annotators} / "
                  f"{capacity.throughput:.1f} req/s = {options.annotators / capacity.throughput * 1000:.1f} ms "
                  f"(measured mean {mean:.1f} ms)")
            results.append((label, baseline, target, capacity))
        finally:
            server.stop()

    print(f"\nsummary ({options.annotators} annotators, {options.seconds:.0f} s phases; baseline 1 annotator, "
          f"{options.baseline_seconds:.0f} s)")
    print(f"{'server':<7} {'phase':<9} {'requests':>8} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'mean ms':>7} "
          f"{'req/s':>7} {'CPU ms/req':>10} {'errors':>6} {'lost':>5} {'dup':>4} {'lostupd':>7}  other sessions")
    failed = False
    for label, *phases in results:
        for kind, phase in zip(("baseline", "target", "capacity"), phases, strict=True):
            s, c = phase.stats["all"], phase.check
            failed = failed or phase.bad > 0
            other = phase.contention.split("other sessions ", 1)[-1].split(";", 1)[0]
            print(f"{label:<7} {kind:<9} {s['n']:>8} {s['p50']:>7.2f} {s['p95']:>7.2f} {s['p99']:>7.2f} "
                  f"{s['mean']:>7.2f} {phase.throughput:>7.1f} {sum(phase.cpu_ms.values()):>10.2f} "
                  f"{phase.errors:>6} {c.lost:>5} {c.duplicated:>4} {c.lost_updates:>7}  {other} cores")
    print("  (CPU ms/req: clients + gunicorn + PostgreSQL per request; other sessions: load from outside this "
          "benchmark, which makes figures noisy)")
    for label, _baseline, target, capacity in results:
        t, k = target.stats["all"], capacity.stats["all"]
        met = t["p95"] <= TARGET_P95_MS and target.bad == 0
        print(f"\n{label}: TARGET ({options.annotators} annotators saving every ~{options.pace_ms:.0f} ms, "
              f"{target.throughput:.1f} saves/s): p95 {t['p95']:.1f} ms <= {TARGET_P95_MS:.0f} ms, errors "
              f"{target.errors}, lost {target.check.lost}, duplicated {target.check.duplicated}: {yes_no(met)}")
        print(f"{label}: capacity (closed loop): {capacity.throughput:.1f} req/s, p50 {k['p50']:.1f} ms, "
              f"p95 {k['p95']:.1f} ms (p95 <= {TARGET_P95_MS:.0f} ms: {'yes' if k['p95'] <= TARGET_P95_MS else 'no'}; "
              f"by Little's law the mean is {options.annotators} / {capacity.throughput:.0f} req/s = "
              f"{options.annotators / capacity.throughput * 1000:.0f} ms), errors {capacity.errors}, "
              f"lost {capacity.check.lost}, duplicated {capacity.check.duplicated}")
    if failed:
        print("\nFAILED: a request failed or a row was lost, duplicated or overwritten (see the phases above)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
