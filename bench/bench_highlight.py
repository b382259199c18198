"""Benchmark: the semantic-highlight request for a 40-sentence passage.

Times POST /api/samples/<id>/similarity/ with a selection in the summary (the
server ranks every source sentence with annotate.highlight: one forward pass of
the model over the selection's sentence, BM25 over the source sentences, the
stored sentence vectors) through Django's
test Client in-process (server time: middleware, session auth, access checks,
the service, JSON rendering; model already loaded), and the bare service call
``annotate.services.embedding.similarity``. Baseline, measured in the same run
and interleaved request by request: the same summary and the same selections
against a 4-sentence passage. Target: p95 <= 50 ms for the 40-sentence request.

Also printed: the bare ``embedder.embed`` of each selection (what the service did
before annotate.highlight, for scale), the process CPU
time of every call (torch's intra-op threads included), and the 40-sentence
request once more with ``torch.set_num_threads(1)`` (torch's default is one
thread per core; on a shared 2-core machine that default makes the tail much
longer).

    .venv/bin/python bench/bench_highlight.py [--requests 300] [--warmup 20]

SQLite in a temporary folder by default; PostgreSQL when DATABASE_URL is set
(a throwaway database is created on that server and dropped afterwards).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    CpuMonitor,
    database_version,
    machine,
    paragraph,
    start_django,
    summary,
    yes_no,
)

TARGET_P95_MS = 50.0
LONG, SHORT = 40, 4


def selections(text: str, count: int, rng: random.Random) -> list[tuple[int, int]]:
    """Word-aligned selections of 2-12 words, as an annotator drags them."""
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == " "]
    ends = [i for i, ch in enumerate(text) if ch == " "] + [len(text)]
    chosen = []
    for _ in range(count):
        first = rng.randrange(len(starts))
        last = min(len(ends) - 1, first + rng.randint(1, 11))
        chosen.append((starts[first], ends[last]))
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300, help="measured requests per case (>= 200)")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    options = parser.parse_args()

    env = start_django("highlight")
    try:
        return run(options)
    finally:
        env.close()


def run(options: argparse.Namespace) -> int:
    import torch
    from django.contrib.auth import get_user_model
    from django.test import Client

    from annotate import embedder
    from annotate.models import Assignment, Membership, Project, Sample
    from annotate.services import embedding
    from annotate.services.ingest import import_batches, parse_samples_jsonl

    rng = random.Random(options.seed)
    summary_text = paragraph(rng, 4)
    lines = [
        {"passage_id": f"p{count}", "source": paragraph(rng, count), "summary": summary_text,
         "generator": "bench/model", "sample_id": f"s{count}"}
        for count in (LONG, SHORT)
    ]
    content = "\n".join(json.dumps(line) for line in lines)

    project = Project.objects.create(name="Highlight bench", slug="highlight-bench")
    user = get_user_model().objects.create_user(username="annotator", password="unused-password-1")  # noqa: S106
    Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    report = import_batches(project, parse_samples_jsonl(content, "highlight.jsonl"))
    for batch in report.batches:
        Assignment.objects.create(batch=batch, annotator=user)
    started = time.perf_counter()
    embedder.get_model()
    model_load = time.perf_counter() - started
    started = time.perf_counter()
    assert report.job is not None
    embedding.run_embedding_job(report.job.pk)
    embed_job = time.perf_counter() - started

    samples = {s.external_id: s for s in Sample.objects.select_related("passage", "project", "batch")}
    cases = {LONG: samples[f"s{LONG}"], SHORT: samples[f"s{SHORT}"]}
    for count, sample in cases.items():
        found = len(sample.passage.sentences or [])
        if found != count:
            raise SystemExit(f"bench: passage meant to have {count} sentences was split into {found}")

    print(f"machine: {machine()}; database: {database_version()}")
    print(f"model {embedder.model_name()} loaded in {model_load:.2f} s; embedding job for the set-up "
          f"took {embed_job:.2f} s")
    print(f"summary: {len(summary_text)} characters, {len(cases[LONG].sentences or [])} sentences; "
          f"passages: {LONG} sentences ({len(cases[LONG].passage.text)} chars) and "
          f"{SHORT} sentences ({len(cases[SHORT].passage.text)} chars)")

    client = Client()
    client.force_login(user)
    chosen = selections(summary_text, options.warmup + options.requests, rng)

    def post(sample: Sample, start: int, end: int) -> tuple[float, float]:
        body = json.dumps({"side": "summary", "start": start, "end": end})
        cpu, began = time.process_time(), time.perf_counter()
        response = client.post(f"/api/samples/{sample.pk}/similarity/", body, content_type="application/json")
        took, cpu = time.perf_counter() - began, time.process_time() - cpu
        if response.status_code != 200:
            raise SystemExit(f"bench: similarity answered {response.status_code}: {response.content[:300]!r}")
        return took, cpu

    def call(sample: Sample, start: int, end: int) -> tuple[float, float]:
        cpu, began = time.process_time(), time.perf_counter()
        result = embedding.similarity(sample, "summary", start, end)
        took, cpu = time.perf_counter() - began, time.process_time() - cpu
        assert len(result["sentences"]) == len(sample.passage.sentences or [])
        return took, cpu

    def embed_only(sample: Sample, start: int, end: int) -> tuple[float, float]:
        cpu, began = time.process_time(), time.perf_counter()
        embedder.embed([sample.summary[start:end]])
        return time.perf_counter() - began, time.process_time() - cpu

    keys = ("client-40", "client-4", "service-40", "service-4", "embed")
    wall: dict[str, list[float]] = {key: [] for key in keys}
    cpu: dict[str, list[float]] = {key: [] for key in keys}

    def measure(key: str, function: Any, count: int, start: int, end: int, keep: bool) -> None:
        took, used = function(cases[count], start, end)
        if keep:
            wall[key].append(took)
            cpu[key].append(used)

    with CpuMonitor() as monitor:
        for number, (start, end) in enumerate(chosen):
            keep = number >= options.warmup
            # Alternate which case goes first so neither always runs right after the other.
            order = (LONG, SHORT) if number % 2 == 0 else (SHORT, LONG)
            for count in order:
                measure(f"client-{count}", post, count, start, end, keep)
            for count in order:
                measure(f"service-{count}", call, count, start, end, keep)
            measure("embed", embed_only, LONG, start, end, keep)

    # The same 40-sentence request with torch on one intra-op thread (torch uses every core by default).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    wall["client-40-1t"], cpu["client-40-1t"] = [], []
    for number, (start, end) in enumerate(chosen):
        measure("client-40-1t", post, LONG, start, end, number >= options.warmup)
    torch.set_num_threads(threads)

    rows = [
        ("client, 40-sentence passage", "client-40", "client-4"),
        ("client, 4-sentence (baseline)", "client-4", "client-4"),
        ("service, 40-sentence passage", "service-40", "service-4"),
        ("service, 4-sentence (baseline)", "service-4", "service-4"),
        ("embed() of the selection only", "embed", None),
        ("client, 40-sent., torch 1 thread", "client-40-1t", "client-40"),
    ]
    print(f"\nPOST /api/samples/<id>/similarity/, selection of 2-12 words in the summary; "
          f"{options.requests} measured requests per case after {options.warmup} warm-up, interleaved; "
          f"torch threads {threads}")
    print(f"{'case':<33} {'n':>4} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'req/s':>6} {'p50 x':>6} "
          f"{'p95 x':>6} {'cpu p50':>8} {'cpu p95':>8}")
    stats = {key: summary(values) for key, values in wall.items()}
    cpu_stats = {key: summary(values) for key, values in cpu.items()}
    for label, key, base in rows:
        s, c = stats[key], cpu_stats[key]
        ratio50 = f"{s['p50'] / stats[base]['p50']:.2f}" if base else ""
        ratio95 = f"{s['p95'] / stats[base]['p95']:.2f}" if base else ""
        print(f"{label:<33} {s['n']:>4} {s['p50']:>7.2f} {s['p95']:>7.2f} {s['p99']:>7.2f} "
              f"{1000 / s['mean']:>6.1f} {ratio50:>6} {ratio95:>6} {c['p50']:>8.2f} {c['p95']:>8.2f}")
    print("(ratios: against the row's baseline, the 4-sentence case, or for the last row the default-thread run;"
          " req/s = 1 / mean, one request at a time; cpu = process CPU ms, all threads)")
    overhead = stats["client-40"]["p50"] - stats["service-40"]["p50"]
    print(f"request overhead around the service (client p50 - service p50, 40 sentences): {overhead:.2f} ms")
    print(monitor.describe())
    p95 = stats["client-40"]["p95"]
    print(f"target p95 <= {TARGET_P95_MS:.0f} ms for the 40-sentence request: {yes_no(p95 <= TARGET_P95_MS)} "
          f"(p95 {p95:.2f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
