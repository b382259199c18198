"""Benchmark: agreement on 100,000 samples x 3 annotators, batches of 50.

Standalone (pure module only, no Django). Prints median and p95 wall time of
compute_alpha pooled and batch-mean for each level, the bootstrap interval,
and everything the agreement page shows with its defaults (3 schemes x 3
levels, pooled, each with a bootstrap interval of 200 resamples asked, and the
pairwise alphas of the first scheme and level) from labels coded once, as
annotate.services.stats.agreement_figures computes them once the rows are read.
As a baseline measured in the same run: one bare krippendorff.alpha call on
the ready-made annotators x samples matrix (what the package alone costs).

Target: agreement over 100,000 samples x 3 annotators in under 5 s (the page's
whole set; the database read that precedes it is in bench_results_page.py).

    .venv/bin/python bench/bench_agreement.py [--samples 100000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import krippendorff
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CpuMonitor, machine, yes_no  # noqa: E402

from annotate.agreement import (  # noqa: E402  (after the path set-up above)
    LEVELS,
    BatchLabels,
    bootstrap_interval,
    bootstrap_intervals,
    bootstrap_resamples,
    code_labels,
    compute_alpha,
    pairwise_alpha,
    reliability_matrix,
)

BATCH_SIZE = 50
ANNOTATORS_PER_BATCH = 3
PAGE_SCHEMES = ("C+B|Q+U", "C+B|Q|U", "C|B|Q|U")
PAGE_BOOTSTRAP = 200
TARGET_SECONDS = 5.0


def make_batches(samples: int, seed: int = 0) -> list[BatchLabels]:
    """Seeded FaithBench-like data: 3 of 12 people per batch, labels agreeing ~70% of the time.

    As in real data, most Consistent labels are absent (no span) rather than given.
    """
    rng = np.random.default_rng(seed)
    people = [f"annotator-{index}" for index in range(12)]
    categories = np.array(list("CBQU"))
    batches = []
    for first in range(0, samples, BATCH_SIZE):
        keys = list(range(first, min(first + BATCH_SIZE, samples)))
        roster = [str(person) for person in rng.choice(people, size=ANNOTATORS_PER_BATCH, replace=False)]
        truth = rng.choice(categories, size=len(keys), p=[0.55, 0.15, 0.1, 0.2])
        labels: dict[tuple[str, object], str] = {}
        for person in roster:
            noise = rng.choice(categories, size=len(keys))
            agree = rng.random(len(keys)) < 0.7
            for key, true, other, keep in zip(keys, truth, noise, agree, strict=True):
                category = str(true if keep else other)
                if category != "C":
                    labels[(person, key)] = category
        batches.append(BatchLabels(f"batch-{first // BATCH_SIZE}", roster, keys, labels))
    return batches


def timed(call: Callable[[], object], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def p95(times: list[float]) -> float:
    return float(np.percentile(times, 95))


def page_figures(batches: list[BatchLabels]) -> None:
    """What the agreement page computes once the round's labels are read (stats.agreement_figures)."""
    coded = code_labels(batches)
    for scheme in PAGE_SCHEMES:
        bootstrap_intervals(coded, scheme, LEVELS, samples=PAGE_BOOTSTRAP)
        for level in LEVELS:
            compute_alpha(coded, scheme, level, "pooled")
    pairwise_alpha(coded, PAGE_SCHEMES[0], LEVELS[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--scheme", default="C|B|Q|U")
    options = parser.parse_args()
    with CpuMonitor() as monitor:
        run(options)
    print(monitor.describe())


def run(options: argparse.Namespace) -> None:
    print(f"machine: {machine()}")
    start = time.perf_counter()
    batches = make_batches(options.samples)
    print(
        f"data: {options.samples} samples x {ANNOTATORS_PER_BATCH} annotators in {len(batches)} batches "
        f"of {BATCH_SIZE}, scheme {options.scheme} (generated in {time.perf_counter() - start:.2f} s)"
    )
    _, _, matrix = reliability_matrix(batches, options.scheme)
    print(f"{'call':<34} {'median s':>9} {'p95 s':>8} {'vs baseline':>12}")
    for level in LEVELS:
        baseline = timed(
            partial(krippendorff.alpha, reliability_data=matrix, level_of_measurement=level), options.repeats
        )
        base = statistics.median(baseline)
        print(f"{'baseline krippendorff ' + level:<34} {base:>9.3f} {p95(baseline):>8.3f} {'1.00x':>12}")
        for aggregate in ("pooled", "batch-mean"):
            result = compute_alpha(batches, options.scheme, level, aggregate)
            times = timed(partial(compute_alpha, batches, options.scheme, level, aggregate), options.repeats)
            label = f"compute_alpha {level} {aggregate}"
            print(
                f"{label:<34} {statistics.median(times):>9.3f} {p95(times):>8.3f} "
                f"{statistics.median(times) / base:>11.2f}x   alpha={result.alpha:.4f} units={result.units}"
            )
    resamples = bootstrap_resamples(options.samples, 1000)
    times = timed(partial(bootstrap_interval, batches, options.scheme, "nominal", samples=1000), 3)
    print(
        f"{'bootstrap_interval nominal':<34} {statistics.median(times):>9.3f} {p95(times):>8.3f} "
        f"{'':>12}   ({resamples} resamples at this size)"
    )
    times = timed(partial(page_figures, batches), 3)
    print(
        f"{'agreement page figures':<34} {statistics.median(times):>9.3f} {p95(times):>8.3f} "
        f"{'':>12}   (3 schemes x 3 levels pooled with intervals, pairwise; labels coded once)"
    )
    print(f"target: the page's agreement figures in under {TARGET_SECONDS:.0f} s: "
          f"{yes_no(p95(times) < TARGET_SECONDS)} (median {statistics.median(times):.2f} s)")


if __name__ == "__main__":
    main()
