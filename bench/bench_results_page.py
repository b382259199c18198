"""Benchmark: GET /projects/<slug>/results/ at 100,000 samples x 3 annotators.

Builds a FaithBench-like project with bulk_create (10,000 passages x 10
generators, batches of 5 passages = 50 samples, 3 of 12 annotators per batch,
all submitted in round 1, a span per non-consistent label, four detector
outputs in every sample's metadata), then times the results page through
Django's test Client in-process, logged in as the project's admin:

- cold: the results cache emptied before each request (every number computed
  from the database by annotate.services.stats);
- warm: the cache filled by an earlier request (the usual case: the data
  version is read, the figures come from the cache, the page is rendered);
- baseline, measured in the same run and interleaved: the same page, warm, for
  a 1,000-sample project in the same database.

Target: p95 < 300 ms for the results page (warm). The cold figure is what
the first visitor after a data change waits.

    .venv/bin/python bench/bench_results_page.py [--samples 100000] [--requests 30] [--cold 5] [--agreement]

SQLite in a temporary folder (its own FAITHLAB_DATA_DIR) by default;
PostgreSQL when DATABASE_URL is set (a throwaway database is created on that
server and dropped afterwards).
"""

from __future__ import annotations

import argparse
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
    sentence,
    start_django,
    summary,
    yes_no,
)

TARGET_P95_MS = 300.0
SMALL_SAMPLES = 1_000
GENERATORS = [f"org/model-{index}" for index in range(10)]
PASSAGES_PER_BATCH = 5
ANNOTATORS = 12
PER_BATCH = 3
# Worst label of a sample before annotator noise: C, B, Q, U.
TRUTH = (("C", 0.55), ("B", 0.15), ("Q", 0.1), ("U", 0.2))
LABELS = {"B": ["Benign"], "Q": ["Questionable"], "U": ["Unwanted", "Unwanted.Intrinsic"]}


def make_people() -> tuple[Any, list[Any]]:
    """The admin (who logs in) and the annotators, shared by the benchmark's projects."""
    from django.contrib.auth import get_user_model

    user_model = get_user_model()
    admin = user_model.objects.create_user(username="bench-admin", password="unused-password-1")  # noqa: S106
    user_model.objects.bulk_create([user_model(username=f"annotator-{index}") for index in range(ANNOTATORS)])
    return admin, list(user_model.objects.filter(username__startswith="annotator-").order_by("username"))


def build(slug: str, samples: int, seed: int, admin: Any, people: list[Any]) -> Any:
    """A project of ``samples`` samples (rounded down to whole passages) with ``admin`` as its admin."""
    from django.db import transaction

    from annotate.models import Assignment, Batch, Membership, Passage, Project, Sample, SpanAnnotation

    rng = random.Random(seed)
    project = Project.objects.create(name=f"Results bench {slug}", slug=slug)
    Membership.objects.create(project=project, user=admin, role=Membership.Role.ADMIN)
    Membership.objects.bulk_create(
        [Membership(project=project, user=person, role=Membership.Role.ANNOTATOR) for person in people]
    )
    passages_total = samples // len(GENERATORS)
    categories = [category for category, _ in TRUTH]
    weights = [weight for _, weight in TRUTH]
    words = paragraph(rng, 5)
    with transaction.atomic():
        batches = Batch.objects.bulk_create(
            [
                Batch(project=project, name=f"batch-{number:05d}", position=number)
                for number in range((passages_total + PASSAGES_PER_BATCH - 1) // PASSAGES_PER_BATCH)
            ]
        )
        passages = Passage.objects.bulk_create(
            [Passage(project=project, external_id=f"p{number}", text=words) for number in range(passages_total)],
            batch_size=2000,
        )
        rows = []
        for number, passage in enumerate(passages):
            batch = batches[number // PASSAGES_PER_BATCH]
            for offset, generator in enumerate(GENERATORS):
                hhem = round(rng.random(), 3)
                rows.append(
                    Sample(
                        project=project,
                        passage=passage,
                        batch=batch,
                        position=(number % PASSAGES_PER_BATCH) * len(GENERATORS) + offset,
                        external_id=str(len(rows)),
                        summary=sentence(rng),
                        generator=generator,
                        metadata={
                            "summarizer": generator,
                            "hhem-2.1": hhem,
                            "hhemv1": round(min(1.0, max(0.0, hhem + rng.uniform(-0.3, 0.3))), 3),
                            "trueteacher": rng.randint(0, 1),
                            "gpt_4o": rng.choice([0, 1, 1, None]),
                        },
                    )
                )
        created = Sample.objects.bulk_create(rows, batch_size=5000)
        assignments = []
        spans = []
        for batch_number, batch in enumerate(batches):
            roster = rng.sample(people, PER_BATCH)
            assignments.extend(
                Assignment(batch=batch, annotator=person, round=1, status=Assignment.Status.SUBMITTED)
                for person in roster
            )
            first = batch_number * PASSAGES_PER_BATCH * len(GENERATORS)
            for sample in created[first : first + PASSAGES_PER_BATCH * len(GENERATORS)]:
                truth = rng.choices(categories, weights)[0]
                for person in roster:
                    category = truth if rng.random() < 0.7 else rng.choice(categories)
                    if category == "C":
                        continue
                    start = rng.randrange(0, max(1, len(sample.summary) - 10))
                    end = min(len(sample.summary), start + rng.randint(3, 30))
                    spans.append(
                        SpanAnnotation(
                            sample=sample, annotator=person, round=1, start=start, end=end,
                            text=sample.summary[start:end], labels=LABELS[category],
                        )
                    )
        Assignment.objects.bulk_create(assignments, batch_size=5000)
        SpanAnnotation.objects.bulk_create(spans, batch_size=5000)
    return project


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=30, help="measured warm requests per page")
    parser.add_argument("--cold", type=int, default=5, help="measured cold requests (cache emptied each time)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--agreement", action="store_true", help="also time the agreement page once cold, 5x warm")
    options = parser.parse_args()
    env = start_django("results")
    try:
        return run(options)
    finally:
        env.close()


def run(options: argparse.Namespace) -> int:
    from django.core.cache import cache
    from django.test import Client

    from annotate.models import Sample, SpanAnnotation

    started = time.perf_counter()
    admin, people = make_people()
    project = build("results-bench", options.samples, options.seed, admin, people)
    small = build("results-small", SMALL_SAMPLES, options.seed + 1, admin, people)
    built = time.perf_counter() - started
    samples = Sample.objects.filter(project=project).count()
    spans = SpanAnnotation.objects.filter(sample__project=project).count()
    print(f"machine: {machine()}; database: {database_version()}")
    print(f"data: {samples} samples, {PER_BATCH} annotators per batch of {PASSAGES_PER_BATCH * len(GENERATORS)}, "
          f"{spans} spans, {len(GENERATORS)} generators, 4 detectors; baseline project {SMALL_SAMPLES} samples "
          f"(built in {built:.1f} s)")

    client = Client()
    client.force_login(admin)
    results_url = f"/projects/{project.slug}/results/"
    small_url = f"/projects/{small.slug}/results/"

    def get(url: str) -> float:
        began = time.perf_counter()
        response = client.get(url)
        took = time.perf_counter() - began
        if response.status_code != 200:
            raise SystemExit(f"bench: {url} answered {response.status_code}: {response.content[:300]!r}")
        return took

    timings: dict[str, list[float]] = {"cold": [], "warm": [], "small": []}
    with CpuMonitor() as monitor:
        for _ in range(options.cold):
            cache.clear()
            timings["cold"].append(get(results_url))
        for number in range(options.warmup + options.requests):
            # Interleaved, so both pages see the same machine load.
            warm, base = get(results_url), get(small_url)
            if number >= options.warmup:
                timings["warm"].append(warm)
                timings["small"].append(base)
        if options.agreement:
            agreement_url = f"/projects/{project.slug}/agreement/"
            cache.clear()
            timings["agreement-cold"] = [get(agreement_url)]
            timings["agreement-warm"] = [get(agreement_url) for _ in range(5)]

    figures = {key: summary(values) for key, values in timings.items()}
    print(f"\nGET {results_url} through the test Client, logged in as the admin, DEBUG off")
    print(f"{'case':<44} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'p50 x':>7}")
    base = figures["small"]["p50"]
    rows = [
        ("results page, cold (cache emptied)", "cold"),
        ("results page, warm", "warm"),
        (f"baseline: results page, {SMALL_SAMPLES} samples, warm", "small"),
    ]
    if options.agreement:
        rows += [("agreement page, cold (defaults)", "agreement-cold"), ("agreement page, warm", "agreement-warm")]
    for label, key in rows:
        row = figures[key]
        print(f"{label:<44} {row['n']:>4} {row['p50']:>8.1f} {row['p95']:>8.1f} {row['p99']:>8.1f} "
              f"{row['p50'] / base:>6.2f}x")
    print(monitor.describe())
    p95 = figures["warm"]["p95"]
    print(f"target p95 < {TARGET_P95_MS:.0f} ms for the results page (warm): {yes_no(p95 < TARGET_P95_MS)} "
          f"(p95 {p95:.1f} ms; cold p95 {figures['cold']['p95']:.1f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
