"""Benchmark: compute_alpha on 100,000 samples x 3 annotators, batches of 50.

Standalone (pure module only, no Django). Prints median and p95 wall time of
compute_alpha pooled and batch-mean for each level, the bootstrap interval,
and as a baseline measured in the same run one bare krippendorff.alpha call
on the ready-made annotators x samples matrix (what the package alone costs).

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

from annotate.agreement import (  # noqa: E402  (after the path set-up above)
    LEVELS,
    BatchLabels,
    bootstrap_interval,
    bootstrap_resamples,
    compute_alpha,
    reliability_matrix,
)

BATCH_SIZE = 50
ANNOTATORS_PER_BATCH = 3


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--scheme", default="C|B|Q|U")
    options = parser.parse_args()

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


if __name__ == "__main__":
    main()
