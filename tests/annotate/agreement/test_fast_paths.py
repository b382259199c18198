"""The fast paths of label alpha (pure module, no database): per-batch alphas, the bootstrap and batch codes are
computed from value-count patterns and arrays; these tests hold them to straightforward implementations."""

from __future__ import annotations

import numpy as np
import pytest

from annotate.agreement import (
    LEVELS,
    BatchCodes,
    BatchLabels,
    Scheme,
    bootstrap_interval,
    bootstrap_intervals,
    bootstrap_resamples,
    code_labels,
    compute_alpha,
    pairwise_alpha,
    parse_scheme,
)
from tests.annotate.agreement.batches import CODE, SCHEMES, batch, random_batches
from tests.annotate.agreement.reference import straightforward_alpha

# --------------------------------------------------------------------------- fast paths against straightforward ones
# The per-batch alphas, the bootstrap and token-level alpha are computed from
# value-count patterns and arrays (see the module docstring). These tests hold
# them to straightforward implementations: krippendorff.alpha per set of units,
# resampling count rows with the same draws, and the loops the module used to run.


def random_counts_batches(seed: int, most: int, count: int = 12) -> list[BatchLabels]:
    """Batches of 1..``most`` annotators, some of them one-valued, some one-person, some empty."""
    rng = np.random.default_rng(seed)
    people = [f"p{index}" for index in range(8)]
    batches = []
    for index in range(count):
        roster = [str(person) for person in rng.choice(people, size=int(rng.integers(1, most + 1)), replace=False)]
        samples = list(range(int(rng.integers(1, 25))))
        palette = list("CBQU") if index % 4 else ["C", "U"]
        labels = {
            (person, key): str(rng.choice(palette))
            for person in roster
            for key in samples
            if rng.random() < 0.8
        }
        batches.append(BatchLabels(f"b{index}", roster, samples, labels))
    return batches


def value_counts(batch: BatchLabels, scheme: Scheme) -> np.ndarray:
    counts = np.zeros((len(batch.samples), len(scheme.groups)), dtype=np.int64)
    for column, key in enumerate(batch.samples):
        for person in batch.annotators:
            value = scheme[batch.labels.get((person, key), "C")]
            if value is not None:
                counts[column, value] += 1
    return counts


@pytest.mark.parametrize("most", [3, 5])
@pytest.mark.parametrize("scheme", SCHEMES)
def test_per_batch_alphas_equal_krippendorff_on_each_batch(most: int, scheme: str) -> None:
    parsed = parse_scheme(scheme)
    batches = random_counts_batches(seed=most * 7 + len(scheme), most=most)
    for level in LEVELS:
        per_batch = compute_alpha(batches, parsed, level).per_batch
        for each, entry in zip(batches, per_batch, strict=True):
            expected = straightforward_alpha(value_counts(each, parsed), len(parsed.groups), level)
            if most <= 3:  # coincidences are whole or half numbers: the same float, bit for bit
                assert entry["alpha"] == expected, (each.name, level)
            else:
                assert entry["alpha"] == (None if expected is None else pytest.approx(expected, rel=1e-12, abs=1e-15))


def straightforward_bootstrap(batches: list[BatchLabels], scheme: Scheme, level: str, samples: int, seed: int):
    """The bootstrap as it was: resample the count rows with the same draws, call krippendorff on each resample."""
    counts = np.concatenate([value_counts(batch, scheme) for batch in batches])
    counts = counts[counts.sum(axis=1) >= 2]
    if straightforward_alpha(counts, len(scheme.groups), level) is None:
        return None
    rng = np.random.default_rng(seed)
    estimates = []
    for _ in range(bootstrap_resamples(len(counts), samples)):
        value = straightforward_alpha(counts[rng.integers(0, len(counts), size=len(counts))], len(scheme.groups), level)
        if value is not None:
            estimates.append(value)
    tail = (1 - 0.95) / 2 * 100  # as the module writes it (a hair above 2.5)
    low, high = np.percentile(estimates, [tail, 100 - tail])
    return float(low), float(high)


@pytest.mark.parametrize("most", [3, 5])
@pytest.mark.parametrize("level", LEVELS)
def test_bootstrap_equals_resampling_rows_with_krippendorff_and_the_same_draws(most: int, level: str) -> None:
    for seed in range(3):
        batches = random_counts_batches(seed=seed, most=most, count=5)
        for scheme in ("C|B|Q|U", "C+B|Q+U", "C|U"):
            parsed = parse_scheme(scheme)
            fast = bootstrap_interval(batches, parsed, level, samples=60, seed=seed)
            slow = straightforward_bootstrap(batches, parsed, level, samples=60, seed=seed)
            if most <= 3 or slow is None:
                assert fast == slow, (seed, scheme)
            else:
                assert fast == pytest.approx(slow, rel=1e-12)


def test_batch_codes_mean_the_same_as_batch_labels() -> None:
    batches = random_batches(seed=3, count=6)
    codes = [
        BatchCodes(
            batch.name, batch.annotators, batch.samples,
            np.array([[CODE[batch.labels.get((person, key), "C")] for key in batch.samples] for person in batch.annotators]),
        )
        for batch in batches
    ]
    coded = code_labels(codes)
    for scheme in SCHEMES:
        for level in LEVELS:
            assert compute_alpha(codes, scheme, level).as_dict() == compute_alpha(batches, scheme, level).as_dict()
            assert compute_alpha(coded, scheme, level, "batch-mean") == compute_alpha(batches, scheme, level, "batch-mean")
        assert pairwise_alpha(coded, scheme) == pairwise_alpha(batches, scheme)
    with pytest.raises(ValueError, match="codes have shape"):
        code_labels([BatchCodes("x", ["a"], [1, 2], np.zeros((2, 2)))])
    with pytest.raises(ValueError, match="codes must be 0..3"):
        code_labels([BatchCodes("x", ["a"], [1], np.array([[7]]))])


def test_a_pair_that_shares_only_an_empty_batch_gets_an_undefined_alpha() -> None:
    entries = pairwise_alpha([BatchLabels("empty", ["a", "b"], []), batch("b", {"a": "CU", "c": "CU"})], "C|U")
    assert entries[0] == {"annotators": ["a", "b"], "alpha": None, "units": 0,
                          "reason": "no sample has values from both annotators"}





def test_bootstrap_intervals_of_several_levels_equal_one_call_per_level() -> None:
    batches = random_batches(seed=9, count=8)
    together = bootstrap_intervals(batches, "C+B|Q|U", LEVELS, samples=80, seed=4)
    assert together == {level: bootstrap_interval(batches, "C+B|Q|U", level, samples=80, seed=4) for level in LEVELS}
    assert bootstrap_intervals([batch("b", {"a": "CC", "b": "CC"})], "C|U", LEVELS) == dict.fromkeys(LEVELS)
