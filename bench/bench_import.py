"""Benchmark: import 750 samples and embed their sentences.

75 passages of ~20 sentences x 10 summaries each (text drawn from a fixed
vocabulary with a seeded RNG), as JSONL, go through
``annotate.services.ingest.parse_samples_jsonl`` + ``import_batches`` (one
transaction, queues the embedding job), then ``run_embedding_job`` runs
in-process as the Celery task would. Prints import seconds, embedding seconds,
their total and sentences/s, with a breakdown of the embedding job (sentence
splitting, model, database). Baseline, measured in the same run: the first 75
samples of the same file. Target: total < 60 s for 750 samples.

The model is loaded (and its load time printed) before timing, as in a
running worker; the total with a cold load is printed too. Every size is run
with torch's default intra-op threads (one per core) and with one thread
(``--torch-threads default,1``): on a shared 2-core machine the difference is large.

    .venv/bin/python bench/bench_import.py [--passages 75] [--summaries 10] [--repeats 1]
                                           [--torch-threads default,1]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    CpuMonitor,
    database_version,
    machine,
    paragraph,
    sentence,
    start_django,
    yes_no,
)

TARGET_TOTAL_S = 60.0


def make_jsonl(passages: int, summaries: int, seed: int) -> list[str]:
    """One JSON line a sample; every passage has ~20 sentences, every summary 3-5."""
    rng = random.Random(seed)
    lines = []
    for number in range(passages):
        source = paragraph(rng, rng.randint(18, 22))
        for index in range(summaries):
            summary = " ".join(sentence(rng) for _ in range(rng.randint(3, 5)))
            lines.append(json.dumps({
                "passage_id": f"passage-{number}", "source": source, "summary": summary,
                "generator": f"org/model-{index}", "sample_id": f"{number}-{index}",
            }))
    return lines


@dataclass
class Timer:
    """Seconds spent in wrapped functions and in database queries."""

    spent: dict[str, float] = field(default_factory=dict)
    queries: int = 0

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.spent[name] = self.spent.get(name, 0.0) + time.perf_counter() - began

        return timed

    def database(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        began = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.queries += 1
            self.spent["database"] = self.spent.get("database", 0.0) + time.perf_counter() - began


@dataclass
class Run:
    label: str
    threads: int
    samples: int
    passages: int
    sentences: int
    parse: float
    write: float
    embed: float
    breakdown: dict[str, float]
    queries: int

    @property
    def import_seconds(self) -> float:
        return self.parse + self.write

    @property
    def total(self) -> float:
        return self.import_seconds + self.embed


def import_and_embed(lines: list[str], slug: str, label: str) -> Run:
    import torch
    from django.db import connection

    import annotate.embedder
    import annotate.services.embedding as embedding
    from annotate.models import Passage, Project, Sample
    from annotate.services.ingest import import_batches, parse_samples_jsonl

    project = Project.objects.create(name=slug, slug=slug)
    content = "\n".join(lines).encode("utf-8")
    began = time.perf_counter()
    parsed = parse_samples_jsonl(content, f"{slug}.jsonl")
    parse = time.perf_counter() - began
    began = time.perf_counter()
    report = import_batches(project, parsed)
    write = time.perf_counter() - began
    assert report.job is not None and report.samples == len(lines)

    timer = Timer()
    original_split, original_embed = embedding.split_sentences, annotate.embedder.embed
    embedding.split_sentences = timer.wrap("sentence splitting", original_split)
    annotate.embedder.embed = timer.wrap("model (embed)", original_embed)
    try:
        with connection.execute_wrapper(timer.database):
            began = time.perf_counter()
            job = embedding.run_embedding_job(report.job.pk)
            embed = time.perf_counter() - began
    finally:
        embedding.split_sentences, annotate.embedder.embed = original_split, original_embed
    assert job.status == job.Status.DONE, job.error
    sentences = sum(len(s or []) for s in Passage.objects.filter(project=project).values_list("sentences", flat=True))
    sentences += sum(len(s or []) for s in Sample.objects.filter(project=project).values_list("sentences", flat=True))
    return Run(label=label, threads=torch.get_num_threads(), samples=report.samples, passages=Passage.objects.filter(project=project).count(),
               sentences=sentences, parse=parse, write=write, embed=embed, breakdown=timer.spent,
               queries=timer.queries)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=75)
    parser.add_argument("--summaries", type=int, default=10)
    parser.add_argument("--baseline-samples", type=int, default=75)
    parser.add_argument("--repeats", type=int, default=1, help="runs of each size, alternating")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--torch-threads", default="default,1",
                        help="comma-separated torch intra-op thread counts to run; 'default' = torch's choice")
    options = parser.parse_args()
    env = start_django("import")
    try:
        return run(options)
    finally:
        env.close()


def run(options: argparse.Namespace) -> int:
    import torch

    from annotate import embedder

    default_threads = torch.get_num_threads()
    thread_settings = [default_threads if t.strip() == "default" else int(t) for t in options.torch_threads.split(",")]
    lines = make_jsonl(options.passages, options.summaries, options.seed)
    print(f"machine: {machine()}; database: {database_version()}; torch default threads {default_threads}")
    began = time.perf_counter()
    embedder.get_model()
    model_load = time.perf_counter() - began
    print(f"model {embedder.model_name()} loaded in {model_load:.2f} s (before timing, as in a running worker)")
    import_and_embed(make_jsonl(2, 3, options.seed + 1), "warm-up", "warm-up")  # first-call costs of pysbd, torch

    runs: list[Run] = []
    with CpuMonitor() as monitor:
        for repeat in range(options.repeats):
            for threads in thread_settings if repeat % 2 == 0 else reversed(thread_settings):
                torch.set_num_threads(threads)
                runs.append(import_and_embed(lines[: options.baseline_samples], f"baseline-{threads}-{repeat}",
                                             "baseline"))
                runs.append(import_and_embed(lines, f"full-{threads}-{repeat}", "full"))
    torch.set_num_threads(default_threads)

    print(f"\n{'run':<9} {'threads':>7} {'samples':>7} {'passages':>8} {'sentences':>9} {'parse s':>8} "
          f"{'write s':>8} {'import s':>8} {'embed s':>8} {'total s':>8} {'sent/s':>7} {'samples/s':>9} "
          f"{'x baseline':>10}")
    for result in runs:
        baselines = sorted(r.total for r in runs if r.label == "baseline" and r.threads == result.threads)
        base_total = baselines[len(baselines) // 2]
        print(f"{result.label:<9} {result.threads:>7} {result.samples:>7} {result.passages:>8} {result.sentences:>9} "
              f"{result.parse:>8.2f} {result.write:>8.2f} {result.import_seconds:>8.2f} {result.embed:>8.2f} "
              f"{result.total:>8.2f} {result.sentences / result.embed:>7.0f} {result.samples / result.total:>9.1f} "
              f"{result.total / base_total:>9.2f}x")
    print("(sent/s = sentences embedded / embedding seconds; x baseline = total / median baseline total, "
          "same thread count)")
    for result in runs:
        parts = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in sorted(result.breakdown.items()))
        other = result.embed - sum(result.breakdown.values())
        print(f"embedding job breakdown ({result.label}, {result.threads} thread(s), {result.samples} samples): "
              f"{parts}, other {other:.2f} s; {result.queries} queries")
    print(monitor.describe())
    for threads in thread_settings:
        full = [r for r in runs if r.label == "full" and r.threads == threads]
        worst = max(r.total for r in full)
        print(f"target total < {TARGET_TOTAL_S:.0f} s for {full[0].samples} samples, torch {threads} thread(s): "
              f"{yes_no(worst < TARGET_TOTAL_S)} (slowest run {worst:.2f} s; {worst + model_load:.2f} s counting "
              f"a cold model load)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
