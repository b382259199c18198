"""Benchmark: the results and agreement pages at 100,000 samples x 3 annotators.

Builds a FaithBench-like project with bulk_create (10,000 passages x 10
generators, batches of 5 passages = 50 samples, 3 of 12 annotators per batch,
all submitted in round 1, a span per non-consistent label, four detector
outputs in every sample's metadata), then times, through Django's test Client
in-process, logged in as the project's admin, for each page (the results page;
the agreement page with its defaults: 3 schemes x 3 levels, pooled, 200
bootstrap resamples asked; the agreement page's span section, as htmx loads it):

- cold: no figures kept (the FigureSet table emptied before each request), so
  the request computes every number with annotate.services.stats;
- warm: the figures kept are of the current data (the data version is read,
  the figures are loaded and the page rendered);
- stale: a span is added before each request (as during a live campaign), so
  the kept figures are of an older data version: the page shows them with
  their age and queues one refresh task (to the filesystem broker of the
  benchmark's own data folder; no worker runs);
- refresh: what the Celery worker then does, results_cache.refresh_figure_set
  called in-process after a span was added (the cold computation without
  the request);
- baseline, measured in the same run and interleaved with the warm requests:
  the results page, warm, for a 1,000-sample project in the same database.

Target: the results page under 300 ms (p95) at 100,000 samples, as viewers
see it: warm and stale. Cold is what the very first viewer of a query waits.

    .venv/bin/python bench/bench_results_page.py [--samples 100000] [--requests 30] [--cold 3]
        [--refreshes 3] [--pages results,agreement,spans,halu-api,curation]

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


PAGES = ("results", "agreement", "spans", "halu-api", "curation")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=30, help="measured warm and stale requests per page")
    parser.add_argument("--cold", type=int, default=3, help="measured cold requests per page (no figures kept)")
    parser.add_argument("--refreshes", type=int, default=3, help="measured refresh-task runs per page")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--pages", default=",".join(PAGES), help=f"comma-separated, of {', '.join(PAGES)}")
    options = parser.parse_args()
    options.pages = [page.strip() for page in options.pages.split(",") if page.strip()]
    if not options.pages or set(options.pages) - set(PAGES):
        parser.error(f"--pages: choose among {', '.join(PAGES)}")
    env = start_django("results")
    try:
        return run(options)
    finally:
        env.close()


def run(options: argparse.Namespace) -> int:
    from django.core.cache import cache
    from django.test import Client

    from annotate.models import Assignment, FigureSet, Sample, SpanAnnotation
    from annotate.services import results_cache

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
    urls = {
        "results": (f"/projects/{project.slug}/results/", {}),
        "agreement": (f"/projects/{project.slug}/agreement/", {}),
        "spans": (f"/projects/{project.slug}/agreement/?section=spans", {"HTTP_HX_REQUEST": "true"}),
        # Never stale (results_cache.current_figures): "stale" recomputes in the request, as every request did
        # before they were kept; cold is that cost, warm the kept figures read back.
        "halu-api": (f"/api/projects/{project.slug}/halu-rates/", {}),
        "curation": (f"/projects/{project.slug}/curation/?round=1&page=2", {}),
    }
    kinds = {"results": "results", "agreement": "agreement", "spans": "spans", "halu-api": "api-halu-rates",
             "curation": "curation"}
    small_url = f"/projects/{small.slug}/results/"
    # Spans added during the stale and refresh phases: by an annotator of the first batch, on its first sample.
    first = Assignment.objects.filter(batch__project=project).order_by("batch_id", "annotator_id").first()
    target = Sample.objects.filter(batch_id=first.batch_id).order_by("position").first()

    def get(url: str, headers: dict[str, str]) -> float:
        began = time.perf_counter()
        response = client.get(url, **headers)
        took = time.perf_counter() - began
        if response.status_code != 200:
            raise SystemExit(f"bench: {url} answered {response.status_code}: {response.content[:300]!r}")
        return took

    def change_data() -> None:
        SpanAnnotation.objects.create(sample=target, annotator_id=first.annotator_id, round=1, start=0, end=3,
                                      text=target.summary[:3], labels=["Benign"])

    def forget() -> None:
        FigureSet.objects.all().delete()
        cache.clear()

    get(small_url, {})  # imports (scikit-learn takes a second) and connections, before anything is measured
    results: list[tuple[str, str, dict[str, float]]] = []
    monitors = []
    baseline: list[float] = []
    for page in options.pages:
        url, headers = urls[page]
        timings: dict[str, list[float]] = {"cold": [], "warm": [], "stale": [], "refresh": []}
        with CpuMonitor() as monitor:
            for _ in range(options.cold):
                forget()
                timings["cold"].append(get(url, headers))
            get(url, headers)  # figures of the current data
            for number in range(options.warmup + options.requests):
                warm = get(url, headers)
                base = get(small_url, {}) if page == "results" else None  # interleaved: the same machine load
                if number >= options.warmup:
                    timings["warm"].append(warm)
                    if base is not None:
                        baseline.append(base)
            for _ in range(options.requests):
                change_data()
                timings["stale"].append(get(url, headers))
            kept = FigureSet.objects.get(project=project, kind=kinds[page])
            for _ in range(options.refreshes):
                change_data()
                began = time.perf_counter()
                results_cache.refresh_figure_set(kept.pk)
                timings["refresh"].append(time.perf_counter() - began)
        monitors.append((page, monitor))
        for case, values in timings.items():
            results.append((page, case, summary(values)))

    print("\nGET through the test Client, logged in as the admin, DEBUG off; refresh = the worker's task, in-process")
    print(f"{'page':<10} {'case':<10} {'n':>4} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9} {'p50 x':>8}")
    base = summary(baseline)["p50"] if baseline else float("nan")
    if baseline:
        row = summary(baseline)
        print(f"{'results':<10} {'baseline':<10} {row['n']:>4} {row['p50']:>9.1f} {row['p95']:>9.1f} "
              f"{row['p99']:>9.1f} {1:>7.2f}x   ({SMALL_SAMPLES} samples, warm)")
    for page, case, row in results:
        print(f"{page:<10} {case:<10} {row['n']:>4} {row['p50']:>9.1f} {row['p95']:>9.1f} {row['p99']:>9.1f} "
              f"{row['p50'] / base:>7.2f}x")
    for page, monitor in monitors:
        print(f"{page}: {monitor.describe()}")
    found = {(page, case): row for page, case, row in results}
    if "results" in options.pages:
        worst = max(found[("results", "warm")]["p95"], found[("results", "stale")]["p95"])
        print(f"target p95 < {TARGET_P95_MS:.0f} ms for the results page as viewers see it (warm and stale): "
              f"{yes_no(worst < TARGET_P95_MS)} (warm p95 {found[('results', 'warm')]['p95']:.1f} ms, stale p95 "
              f"{found[('results', 'stale')]['p95']:.1f} ms; cold p95 {found[('results', 'cold')]['p95']:.1f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
