"""Benchmark: 20 pair judges answering and getting their next item at once, through a real server on PostgreSQL.

Starts gunicorn (``config.wsgi``, gthread workers, DEBUG=false) on 127.0.0.1
against a throwaway database. Each phase gets its own pairs project with one
open round of ``--items`` items (4 judges each, 2 more on a split, up to 6)
and its own 20 judges with API tokens; one client thread per judge. A judge's
answer is one request, POST /api/pairs/<id>/judgements/, whose response
carries the judge's next item (answer-and-next). Labels are fixed per judge
and item (mostly a hidden truth, 15% against it, 3% "?"), so items split and
go to six judges too.

Phases, each counted row by row afterwards:

- baseline: the same 20 judges at the same pace, each asking GET
  /api/pairs/next/ again and again (the server returns the item they hold: a
  read with the judge's lock, no write);
- **target**: 20 judges, each answering on average every ``--pace-ms`` (1000
  ms: 20 answers a second in all, ten times faster than the 10 s an item
  HaDes' spammer rule takes as the least a person needs; the projects'
  spammer time limit is scaled down with them, ``--spam-seconds`` 0.5, so
  that, as at a person's pace, honest judges are not flagged). Target: p95 of
  answer-and-next <= 50 ms, and afterwards zero over-assigned items, zero
  lost and zero duplicated judgements, nobody served an item twice;
- **capacity**: the same in a closed loop (each judge answers as soon as its
  last answer came back): the most the machine serves. By Little's law its
  latency is judges / throughput, so its p95 says how fast the server is,
  not what a person sees.

Before the server starts, one answer-and-next is measured in-process
(django.test.Client, token auth): its queries and its CPU.

    scripts/with-postgres.sh .venv/bin/python bench/bench_pairs_queue.py \\
        [--seconds 60] [--baseline-seconds 20] [--servers 4x4] [--pace-ms 1000] [--items 1000]

Without a PostgreSQL DATABASE_URL the script runs itself again under
``scripts/with-postgres.sh``. Exit status 1 when a request failed or any count
is not zero, in any phase.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, CpuMonitor, database_version, is_postgres, machine, start_django, summary, yes_no  # noqa: E402
from gunicorn_server import Server  # noqa: E402
from pairs_load import Count, Judge, count_rows, label_for, make_judges, run_judges  # noqa: E402

TARGET_P95_MS = 50.0
JUDGES_PER_ITEM, MAX_JUDGES = 4, 6


@dataclass
class Phase:
    name: str
    judges: int
    seconds: float
    stats: dict[str, dict[str, float]]
    throughput: float  # measured requests of the phase's main kind a second
    statuses: Counter[int]
    errors: int
    count: Count
    failures: list[str]
    cpu: str = ""
    per_judge: list[int] = field(default_factory=list)

    @property
    def bad(self) -> int:
        return self.errors + self.count.bad


def make_project(slug: str, items: int, spam_seconds: float = 10.0) -> Any:
    """A pairs project with one open round of ``items`` items (one perturbed text each)."""
    from annotate.models import PairConfig, PairItem, PairOriginal, PairRound, PerturbedText, Project

    project = Project.objects.create(name=slug, slug=slug, kind=Project.Kind.PAIRS)
    PairConfig.objects.create(project=project, judges_per_item=JUDGES_PER_ITEM, max_judges_per_item=MAX_JUDGES,
                              spam_min_mean_seconds=spam_seconds)
    pair_round = PairRound.objects.create(project=project, number=1, size=items, seed=1)
    text = "The bridge opened in {year}. It carries two lanes and a footpath. Mayor {name} reopened it in March."
    originals = PairOriginal.objects.bulk_create(
        PairOriginal(project=project, external_id=f"o{n}", text=text.format(year=1900 + n % 100, name="Ines Varga"))
        for n in range(items)
    )
    perturbed = PerturbedText.objects.bulk_create(
        PerturbedText(project=project, original=original, text=original.text.replace("Ines Varga", "Tom Price"),
                      source=PerturbedText.Source.PAIRS)
        for original in originals
    )
    PairItem.objects.bulk_create(
        PairItem(
            project=project, perturbed=text_row, external_id=f"i{n}",
            original_start=text_row.text.index("Tom Price"), original_end=text_row.text.index("Tom Price") + 10,
            original_words="Ines Varga", perturbed_start=text_row.text.index("Tom Price"),
            perturbed_end=text_row.text.index("Tom Price") + 9, perturbed_words="Tom Price",
            state=PairItem.State.OPEN, round=pair_round, judges_needed=JUDGES_PER_ITEM,
            selection={"method": "random"},
        )
        for n, text_row in enumerate(perturbed)
    )
    return project


def analyze() -> None:
    """Table statistics, as autovacuum keeps them in a running database.

    Right after the bulk inserts the planner believes the tables empty and
    picks nested loops that cost ~14 ms a statement on 1,000 items instead of
    ~0.3 ms; autovacuum would analyze them within its next minute.
    """
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def measure(name: str, judges: list[Judge], project: Any, server: Server, seconds: float, skip: float, seed: int,
            pace: float, mode: str) -> Phase:
    assert server.process is not None
    with CpuMonitor([server.process.pid]) as monitor:
        outcomes, began, ended = run_judges(judges, server.port, project.slug, seconds, seed, pace, mode)
    kept_from = began + skip
    records = [record for outcome in outcomes for record in outcome.records]
    kept = [record for record in records if record[0] >= kept_from]
    main = "next" if mode == "read" else "answer"
    statuses = Counter(status for *_, status in records)
    errors = sum(count for status, count in statuses.items() if not 200 <= status < 300)
    stats = {kind: summary([took for _, took, k, _ in kept if k == kind]) for kind in ("answer", "next")}
    window = max(1e-9, ended - kept_from)
    return Phase(
        name=name, judges=len(judges), seconds=seconds, stats=stats,
        throughput=sum(1 for *_, kind, _ in kept if kind == main) / window, statuses=statuses, errors=errors,
        count=count_rows(project, outcomes),
        failures=[failure for outcome in outcomes for failure in outcome.failures][:10],
        cpu=monitor.describe(), per_judge=sorted(len(outcome.answered) for outcome in outcomes),
    )


def print_phase(phase: Phase, baseline: Phase | None) -> None:
    print(f"  {phase.name}: {phase.judges} judges for {phase.seconds:.0f} s, "
          f"{sum(phase.statuses.values())} requests, statuses {dict(sorted(phase.statuses.items()))}")
    for kind, title in (("answer", "answer-and-next (POST)"), ("next", "next item (GET)")):
        s = phase.stats[kind]
        if s["n"]:
            print(f"    {title:<24} n={s['n']:<6} p50 {s['p50']:7.2f} ms  p95 {s['p95']:7.2f} ms  "
                  f"p99 {s['p99']:7.2f} ms  mean {s['mean']:7.2f} ms")
    line = f"    throughput {phase.throughput:.1f} req/s"
    if baseline is not None and phase.stats["answer"]["n"]:
        base = baseline.stats["next"]
        answer = phase.stats["answer"]
        line += (f"; answer-and-next against the baseline GET next: p50 x{answer['p50'] / base['p50']:.2f}, "
                 f"p95 x{answer['p95'] / base['p95']:.2f}")
    print(line)
    c = phase.count
    print(f"    rows: {c.items} items ({c.decided} decided), {c.judgements} answered judgements vs "
          f"{c.acknowledged} 201s; over-assigned {c.over_assigned}, lost {c.lost}, duplicated {c.duplicated}, "
          f"served twice {c.served_twice}, counters off {c.counters_off}; errors {phase.errors}")
    if phase.per_judge and phase.per_judge[-1]:
        counts = phase.per_judge
        print(f"    answers per judge: min {counts[0]}, median {counts[len(counts) // 2]}, max {counts[-1]}")
    for failure in phase.failures:
        print(f"    failure: {failure}")
    print(f"    {phase.cpu}")


def request_cost(project: Any, judge: Judge, count: int) -> dict[str, Any]:
    """Queries and CPU of one answer-and-next in-process (django.test.Client, token auth): the server's own work."""
    import json

    from django.db import connection
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Token {judge.token}")
    held = json.loads(client.get(f"/api/pairs/next/?project={project.slug}").content)["id"]

    def answer() -> None:
        nonlocal held
        response = client.post(f"/api/pairs/{held}/judgements/",
                               json.dumps({"label": label_for(judge.username, held)}), content_type="application/json")
        if response.status_code != 201:
            raise SystemExit(f"bench: in-process answer answered {response.status_code}: {response.content[:200]!r}")
        held = json.loads(response.content)["next"]["id"]

    statements: list[str] = []

    def log(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append(sql.split(None, 1)[0])
        return execute(sql, params, many, context)

    for _ in range(20):
        answer()
    with connection.execute_wrapper(log):
        answer()
    rounds = []
    for _ in range(5):
        began = time.thread_time()  # this thread only: no background thread's CPU
        for _ in range(count):
            answer()
        rounds.append((time.thread_time() - began) * 1000 / count)
    return {"queries": len(statements), "kinds": dict(Counter(statements)), "cpu_ms": statistics.median(rounds),
            "cpu_ms_min": min(rounds)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the target and capacity phases")
    parser.add_argument("--baseline-seconds", type=float, default=20.0)
    parser.add_argument("--warmup-seconds", type=float, default=5.0)
    parser.add_argument("--skip-seconds", type=float, default=2.0,
                        help="leading seconds of each phase left out of the latency figures (still counted)")
    parser.add_argument("--judges", type=int, default=20)
    parser.add_argument("--items", type=int, default=1000,
                        help="items in each phase's open round (three times as many in the capacity phase)")
    parser.add_argument("--servers", default="4x4", help="gunicorn settings WORKERSxTHREADS, comma-separated")
    parser.add_argument("--pace-ms", type=float, default=1000.0,
                        help="target phase: each judge answers on average this often (1000: 20 answers/s in all)")
    parser.add_argument("--spam-seconds", type=float, default=0.5,
                        help="the projects' spammer time limit: the judges answer ~10x faster than people, so the "
                        "10 s limit is scaled down with them (0.5); at 10 every judge is flagged too fast and each "
                        "answer also updates a flag")
    parser.add_argument("--cost-requests", type=int, default=50, help="answers per round of the in-process cost (0: skip)")
    parser.add_argument("--seed", type=int, default=9)
    options = parser.parse_args()
    if options.skip_seconds >= min(options.seconds, options.baseline_seconds):
        parser.error("--skip-seconds must be shorter than --seconds and --baseline-seconds")
    if options.pace_ms <= 0:
        parser.error("--pace-ms must be above 0 (the capacity phase is the closed loop)")
    if not is_postgres(os.environ.get("DATABASE_URL")):
        print("bench_pairs_queue: no PostgreSQL DATABASE_URL; running again under scripts/with-postgres.sh",
              flush=True)
        script = str(ROOT / "scripts" / "with-postgres.sh")
        os.execv(script, [script, sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]])  # noqa: S606
    servers = []
    for setting in options.servers.split(","):
        workers, _, threads = setting.strip().partition("x")
        if not (workers.isdigit() and threads.isdigit()):
            parser.error(f"--servers: {setting!r} is not WORKERSxTHREADS, e.g. 4x4")
        servers.append((int(workers), int(threads)))
    os.environ["EMBEDDING_WARMUP"] = "false"  # no model loading thread beside the in-process measurement
    env = start_django("pairs")
    try:
        return run(options, servers, env.data_dir)
    finally:
        env.close()


def run(options: argparse.Namespace, servers: list[tuple[int, int]], data_dir: Path) -> int:
    from django.db import connections

    print(f"machine: {machine()}; database: {database_version()}")
    print(f"each phase: a pairs project with one open round of {options.items} items ({JUDGES_PER_ITEM} judges each, "
          f"up to {MAX_JUDGES} on a split) and {options.judges} judges (threads using http.client, keep-alive); "
          f"spammer time limit {options.spam_seconds:g} s")
    if options.cost_requests > 0:
        project = make_project("cost", options.items, options.spam_seconds)
        analyze()
        cost = request_cost(project, make_judges("cost", 1, project)[0], options.cost_requests)
        print(f"\nanswer-and-next in-process (django.test.Client, token auth, DEBUG=false): {cost['queries']} "
              f"statements {cost['kinds']} (COMMIT not counted), CPU median {cost['cpu_ms']:.2f} ms "
              f"(min {cost['cpu_ms_min']:.2f}) over 5 x {options.cost_requests}")

    results: list[tuple[str, Phase, Phase, Phase]] = []
    pace = options.pace_ms / 1000
    for number, (workers, threads) in enumerate(servers):
        label = f"{workers}x{threads}"
        # The closed loop answers ~4,000 times a minute: its round is three times as big, so it does not run dry.
        projects = {name: make_project(f"s{number}-{name}", options.items * (3 if name == "capacity" else 1),
                                       options.spam_seconds)
                    for name in ("warm", "baseline", "target", "capacity")}
        judges = {name: make_judges(f"s{number}-{name}", options.judges, project) for name, project in projects.items()}
        analyze()
        connections.close_all()
        server = Server(workers, threads, data_dir)
        print(f"\ngunicorn config.wsgi --workers {workers} --threads {threads} --worker-class gthread (DEBUG=false) "
              f"on 127.0.0.1:{server.port}")
        try:
            server.start(judges["warm"][0].token)
            run_judges(judges["warm"], server.port, projects["warm"].slug, options.warmup_seconds, options.seed)
            baseline = measure(f"baseline: {options.judges} judges asking for their next item, one every "
                               f"~{options.pace_ms:.0f} ms each", judges["baseline"], projects["baseline"], server,
                               options.baseline_seconds, options.skip_seconds, options.seed + 1, pace, "read")
            print_phase(baseline, None)
            target = measure(f"TARGET: {options.judges} judges answering, one answer every ~{options.pace_ms:.0f} ms "
                             f"each (~{options.judges / pace:.0f} answers/s offered)", judges["target"],
                             projects["target"], server, options.seconds, options.skip_seconds, options.seed + 2, pace,
                             "answer")
            print_phase(target, baseline)
            capacity = measure(f"CAPACITY: {options.judges} judges answering in a closed loop", judges["capacity"],
                               projects["capacity"], server, options.seconds, options.skip_seconds, options.seed + 3,
                               0.0, "answer")
            print_phase(capacity, baseline)
            print(f"    Little's law: mean latency = judges / throughput = {options.judges} / "
                  f"{capacity.throughput:.1f} req/s = {options.judges / max(capacity.throughput, 1e-9) * 1000:.1f} ms "
                  f"(measured mean {capacity.stats['answer']['mean']:.1f} ms)")
            results.append((label, baseline, target, capacity))
        finally:
            server.stop()

    failed = False
    print(f"\nsummary ({options.judges} judges, {options.items} items a phase)")
    print(f"{'server':<7} {'phase':<9} {'requests':>8} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'req/s':>7} "
          f"{'errors':>6} {'over':>5} {'lost':>5} {'dup':>4} {'twice':>5}")
    for label, *phases in results:
        for kind, phase in zip(("baseline", "target", "capacity"), phases, strict=True):
            s = phase.stats["next" if kind == "baseline" else "answer"]
            c = phase.count
            failed = failed or phase.bad > 0
            print(f"{label:<7} {kind:<9} {s['n']:>8} {s['p50']:>7.2f} {s['p95']:>7.2f} {s['p99']:>7.2f} "
                  f"{phase.throughput:>7.1f} {phase.errors:>6} {c.over_assigned:>5} {c.lost:>5} {c.duplicated:>4} "
                  f"{c.served_twice:>5}")
    for label, baseline, target, capacity in results:
        t = target.stats["answer"]
        met = t["p95"] <= TARGET_P95_MS and target.bad == 0
        print(f"\n{label}: TARGET ({options.judges} judges answering every ~{options.pace_ms:.0f} ms, "
              f"{target.throughput:.1f} answers/s): answer-and-next p95 {t['p95']:.1f} ms <= {TARGET_P95_MS:.0f} ms "
              f"(baseline GET next p95 {baseline.stats['next']['p95']:.1f} ms), over-assigned "
              f"{target.count.over_assigned}, lost {target.count.lost}, duplicated {target.count.duplicated}: "
              f"{yes_no(met)}")
        k = capacity.stats["answer"]
        print(f"{label}: capacity (closed loop): {capacity.throughput:.1f} answers/s, p50 {k['p50']:.1f} ms, "
              f"p95 {k['p95']:.1f} ms; over-assigned {capacity.count.over_assigned}, lost {capacity.count.lost}, "
              f"duplicated {capacity.count.duplicated}")
    if failed:
        print("\nFAILED: a request failed or a count is not zero (see the phases above)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
