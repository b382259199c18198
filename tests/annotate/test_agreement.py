"""Agreement on worst-pooled labels and spans (pure module, no database).

Hand-worked values use Krippendorff's coincidence form: with o the coincidence
matrix, n_c its column sums and n their total,
alpha = 1 - (n - 1) * sum(o_ck d_ck) / sum(n_c n_k d_ck).
"""

from __future__ import annotations

import itertools
import random
import re

import krippendorff
import numpy as np
import pytest

from annotate.agreement import (
    AGGREGATES,
    LEVELS,
    BatchCodes,
    BatchLabels,
    BatchSpans,
    Scheme,
    SchemeError,
    _token_bounds,
    bootstrap_interval,
    bootstrap_intervals,
    bootstrap_resamples,
    code_labels,
    compute_alpha,
    pairwise_alpha,
    pairwise_span_agreement,
    pairwise_span_f1,
    parse_scheme,
    reliability_matrix,
    span_f1,
    summary_tokens,
    token_alpha,
)

CODE = {"C": 0, "B": 1, "Q": 2, "U": 3}

SCHEMES = ["C|U", "C|B|U", "C+B|Q|U", "C+B|Q+U", "C|B|Q|U"]


def batch(name: str, rows: dict[str, str], samples: list[object] | None = None) -> BatchLabels:
    """A batch from one string of categories per annotator, e.g. {"a": "CCUU"}; '.' = no label (C)."""
    length = len(next(iter(rows.values())))
    keys = samples if samples is not None else list(range(length))
    labels = {
        (annotator, keys[position]): category
        for annotator, row in rows.items()
        for position, category in enumerate(row)
        if category != "."
    }
    return BatchLabels(name=name, annotators=list(rows), samples=list(keys), labels=labels)


def random_batches(seed: int, count: int = 6) -> list[BatchLabels]:
    """Batches with varying rosters (2-4 people out of 6), labels drawn with some agreement."""
    rng = np.random.default_rng(seed)
    people = [f"p{index}" for index in range(6)]
    batches = []
    for index in range(count):
        roster = list(rng.choice(people, size=int(rng.integers(2, 5)), replace=False))
        samples = list(range(int(rng.integers(5, 30))))
        truth = rng.choice(list("CBQU"), size=len(samples), p=[0.5, 0.2, 0.1, 0.2])
        labels = {}
        for person in roster:
            for key in samples:
                category = truth[key] if rng.random() < 0.7 else rng.choice(list("CBQU"))
                if category != "C" or rng.random() < 0.5:  # C is given both ways: explicitly and by absence
                    labels[(person, key)] = str(category)
        batches.append(BatchLabels(f"b{index}", roster, samples, labels))
    return batches


# --------------------------------------------------------------------------- schemes


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        ("C|U", (("C",), ("U",))),
        ("C|B|U", (("C",), ("B",), ("U",))),
        ("C+B|Q|U", (("C", "B"), ("Q",), ("U",))),
        ("C+B|Q+U", (("C", "B"), ("Q", "U"))),
        ("C|B|Q|U", (("C",), ("B",), ("Q",), ("U",))),
        ("  c + b | q+u ", (("C", "B"), ("Q", "U"))),
    ],
)
def test_parse_scheme_reads_groups_in_order(text: str, groups: tuple) -> None:
    scheme = parse_scheme(text)
    assert scheme.groups == groups
    assert scheme == Scheme(*groups)


def test_scheme_maps_categories_to_group_position_and_dropped_ones_to_none() -> None:
    scheme = parse_scheme("C+B|Q|U")
    assert dict(scheme) == {"C": 0, "B": 0, "Q": 1, "U": 2}
    assert dict(parse_scheme("C|U")) == {"C": 0, "B": None, "Q": None, "U": 1}
    assert parse_scheme("C|U").dropped == ("B", "Q")
    assert parse_scheme(" C + B | Q + U ").text == "C+B|Q+U"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("C|X", "unknown category 'X'"),
        ("C|BU", "join categories with '+'"),
        ("C|U|C", "'C' is used twice"),
        ("C+C|U", "'C' is used twice"),
        ("C||U", "group 2 is empty"),
        ("C|U|", "group 3 is empty"),
        ("C+|U", "empty category"),
        ("C+B+Q+U", "at least two groups"),
        ("   ", "empty"),
        ("Consistent|Unwanted", "unknown category"),
    ],
)
def test_parse_scheme_rejects_bad_strings_with_a_clear_message(text: str, message: str) -> None:
    with pytest.raises(SchemeError, match=re.escape(message)):
        parse_scheme(text)


def test_scheme_error_is_a_value_error() -> None:
    assert issubclass(SchemeError, ValueError)
    with pytest.raises(ValueError, match="must be a string"):
        parse_scheme(None)  # type: ignore[arg-type]


def test_unknown_level_and_aggregate_are_rejected() -> None:
    data = [batch("b", {"a": "CU", "b": "CU"})]
    with pytest.raises(ValueError, match="unknown level 'ratio'; use one of nominal, ordinal, interval"):
        compute_alpha(data, "C|U", "ratio", "pooled")
    with pytest.raises(ValueError, match="unknown aggregate 'mean'; use one of pooled, batch-mean"):
        compute_alpha(data, "C|U", "nominal", "mean")


# --------------------------------------------------------------------------- hand-worked alpha


def test_nominal_binary_alpha_by_hand() -> None:
    # Units (C,C) (C,U) (U,U) (U,U): o_CC=2, o_CU=o_UC=1, o_UU=4; n_C=3, n_U=5, n=8.
    # alpha = 1 - 7 * 2 / (2 * 3 * 5) = 8/15.
    result = compute_alpha([batch("b1", {"a": "CCUU", "b": "CUUU"})], "C|U", "nominal", "pooled")
    assert result.alpha == pytest.approx(8 / 15)
    assert result.reason is None
    assert (result.units, result.annotators) == (4, 2)


def test_four_category_alpha_by_hand_for_every_level() -> None:
    # Values (0,0) (1,2) (3,3): n = [2, 1, 1, 2], n = 6, only o_12 = o_21 = 1 disagree.
    data = [batch("b1", {"a": "CBU", "b": "CQU"})]
    # nominal: 1 - 5 * 2 / (36 - 10) = 8/13
    assert compute_alpha(data, "C|B|Q|U", "nominal").alpha == pytest.approx(8 / 13)
    # interval: d = (c-k)^2; sum o d = 2; sum n_c n_k d = 114 over ordered pairs -> 1 - 5 * 2 / 114
    assert compute_alpha(data, "C|B|Q|U", "interval").alpha == pytest.approx(52 / 57)
    # ordinal: d_ck = (n_c + .. + n_k - (n_c + n_k)/2)^2 -> d_12 = 1, sum n_c n_k d = 198 -> 1 - 5 * 2 / 198
    assert compute_alpha(data, "C|B|Q|U", "ordinal").alpha == pytest.approx(94 / 99)


def test_schemes_merge_and_drop_categories_by_hand() -> None:
    data = [batch("b1", {"a": "BQU", "b": "CUU"})]
    # C+B|Q|U: (0,0) (1,2) (2,2); n = [2, 1, 3]; 1 - 5 * 2 / (36 - 14) = 6/11
    assert compute_alpha(data, "C+B|Q|U", "nominal").alpha == pytest.approx(6 / 11)
    # C+B|Q+U: (0,0) (1,1) (1,1): no disagreement at all
    assert compute_alpha(data, "C+B|Q+U", "nominal").alpha == pytest.approx(1.0)
    # C|B|U: Q is missing, so the middle sample has one value and drops out: (B,C) (U,U)
    # n = [1, 1, 2]; 1 - 3 * 2 / (16 - 6) = 0.4
    result = compute_alpha(data, "C|B|U", "nominal")
    assert result.alpha == pytest.approx(0.4)
    assert result.units == 2
    # C|U: only the last sample keeps two values, and they agree: alpha is undefined
    result = compute_alpha(data, "C|U", "nominal")
    assert result.alpha is None
    assert result.reason.startswith("only one value occurs: U")
    assert result.units == 1


def test_pooled_and_batch_mean_by_hand() -> None:
    # Sample keys repeat across batches (FaithBench numbers 0..49 in every file): still distinct units.
    first = batch("b1", {"a": "CCUU", "b": "CUUU"})  # 8/15
    second = batch("b2", {"a": "CUC", "c": "CUU"})  # (C,C) (U,U) (C,U): 1 - 5 * 2 / 18 = 4/9
    mean = compute_alpha([first, second], "C|U", "nominal", "batch-mean")
    assert mean.alpha == pytest.approx((8 / 15 + 4 / 9) / 2)
    assert [entry["alpha"] for entry in mean.per_batch] == pytest.approx([8 / 15, 4 / 9])
    assert [entry["units"] for entry in mean.per_batch] == [4, 3]
    assert mean.units == 7
    # Pooled: o_CC = 4, o_UU = 6, o_CU = o_UC = 2; n_C = 6, n_U = 8, n = 14 -> 1 - 13 * 4 / 96
    pooled = compute_alpha([first, second], "C|U", "nominal", "pooled")
    assert pooled.alpha == pytest.approx(11 / 24)
    assert (pooled.units, pooled.annotators) == (7, 3)
    assert pooled.per_batch == mean.per_batch


def test_batch_mean_averages_only_defined_batches() -> None:
    good = batch("good", {"a": "CCUU", "b": "CUUU"})
    lonely = batch("lonely", {"a": "CUCU"})
    result = compute_alpha([good, lonely], "C|U", "nominal", "batch-mean")
    assert result.alpha == pytest.approx(8 / 15)
    assert result.units == 4
    assert result.per_batch[1]["alpha"] is None
    assert "only one annotator" in result.per_batch[1]["reason"]


def test_annotator_of_the_batch_without_a_label_gave_consistent() -> None:
    explicit = batch("b", {"a": "CCUU", "b": "CUUU"})
    implicit = batch("b", {"a": "..UU", "b": ".UUU"})
    assert compute_alpha([implicit], "C|U").alpha == pytest.approx(compute_alpha([explicit], "C|U").alpha)
    # Someone on the roster with no label at all still counts: every sample gets a C from them.
    silent = BatchLabels("b", ["a", "b", "quiet"], explicit.samples, dict(explicit.labels))
    with_silent = compute_alpha([silent], "C|U")
    assert with_silent.annotators == 3
    matrix_alpha = krippendorff.alpha(
        reliability_data=[[0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 0, 0]], level_of_measurement="nominal"
    )
    assert with_silent.alpha == pytest.approx(matrix_alpha)


def test_labels_of_people_or_samples_outside_the_batch_are_ignored() -> None:
    data = batch("b", {"a": "CCUU", "b": "CUUU"})
    data.labels[("stranger", 0)] = "U"
    data.labels[("a", "not-a-sample")] = "U"
    assert compute_alpha([data], "C|U").alpha == pytest.approx(8 / 15)


def test_unknown_category_in_labels_is_an_error() -> None:
    with pytest.raises(ValueError, match="label 'X' of 'a' on sample 0"):
        compute_alpha([batch("b", {"a": "XC", "b": "CC"})], "C|U")


# --------------------------------------------------------------------------- undefined alpha


def test_single_annotator_gives_undefined_alpha_with_reason() -> None:
    result = compute_alpha([batch("b", {"a": "CUBQ"})], "C|B|Q|U", "nominal", "pooled")
    assert result.alpha is None
    assert result.reason == "no sample has two values: each batch has only one annotator"
    assert result.units == 0


def test_only_one_value_gives_undefined_alpha_with_reason() -> None:
    result = compute_alpha([batch("b", {"a": "CCC", "b": "CCC"})], "C+B|Q+U", "interval")
    assert result.alpha is None
    assert result.reason.startswith("only one value occurs: C+B")
    assert result.units == 3


def test_scheme_dropping_every_value_gives_undefined_alpha_with_reason() -> None:
    result = compute_alpha([batch("b", {"a": "BQ", "b": "QB"})], "C|U")
    assert result.alpha is None
    assert "no sample has two values under scheme C|U" in result.reason


def test_no_batches_or_empty_batches_never_crash() -> None:
    for aggregate in AGGREGATES:
        assert compute_alpha([], "C|U", "nominal", aggregate).alpha is None
        empty = compute_alpha([BatchLabels("e", [], [], {})], "C|U", "nominal", aggregate)
        assert empty.alpha is None
        assert empty.reason


def test_batch_mean_with_no_defined_batch_says_why() -> None:
    result = compute_alpha([batch("b", {"a": "CC", "b": "CC"})], "C|U", "nominal", "batch-mean")
    assert result.alpha is None
    assert result.reason.startswith("no batch has a defined alpha: only one value occurs: C")


# --------------------------------------------------------------------------- against the package


@pytest.mark.parametrize(("scheme", "level"), list(itertools.product(SCHEMES, LEVELS)))
def test_pooled_alpha_equals_krippendorff_on_the_reliability_matrix(scheme: str, level: str) -> None:
    batches = random_batches(seed=len(scheme) * 7 + LEVELS.index(level))
    annotators, units, matrix = reliability_matrix(batches, scheme)
    assert matrix.shape == (len(annotators), len(units))
    expected = krippendorff.alpha(
        reliability_data=matrix, value_domain=list(range(len(parse_scheme(scheme).groups))), level_of_measurement=level
    )
    result = compute_alpha(batches, scheme, level, "pooled")
    assert result.alpha == pytest.approx(expected)
    assert result.units == int((np.sum(~np.isnan(matrix), axis=0) >= 2).sum())


@pytest.mark.parametrize(("scheme", "level"), list(itertools.product(SCHEMES, LEVELS)))
def test_batch_mean_equals_mean_of_krippendorff_per_batch(scheme: str, level: str) -> None:
    batches = random_batches(seed=100 + len(scheme) + LEVELS.index(level))
    per_batch = []
    for one in batches:
        _, _, matrix = reliability_matrix([one], scheme)
        try:
            with np.errstate(invalid="ignore", divide="ignore"):  # the package's 0/0 on one value
                value = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
        except ValueError:
            continue
        if np.isfinite(value):
            per_batch.append(value)
    result = compute_alpha(batches, scheme, level, "batch-mean")
    assert result.alpha == pytest.approx(float(np.mean(per_batch)))


def test_reliability_matrix_has_nan_where_annotator_is_not_in_the_batch_or_category_dropped() -> None:
    annotators, units, matrix = reliability_matrix(
        [batch("b1", {"a": "CB", "b": "UU"}), batch("b2", {"c": "QC", "a": "UU"})], "C|U"
    )
    assert annotators == ["a", "b", "c"]
    assert units == [("b1", 0), ("b1", 1), ("b2", 0), ("b2", 1)]
    expected = np.array([[0, np.nan, 1, 1], [1, 1, np.nan, np.nan], [np.nan, np.nan, np.nan, 0]])
    np.testing.assert_array_equal(matrix, expected)


# --------------------------------------------------------------------------- bootstrap and pairs


def test_bootstrap_interval_is_seeded_and_brackets_the_estimate() -> None:
    batches = random_batches(seed=5, count=10)
    point = compute_alpha(batches, "C|B|Q|U", "ordinal").alpha
    first = bootstrap_interval(batches, "C|B|Q|U", "ordinal", samples=200, seed=1)
    again = bootstrap_interval(batches, "C|B|Q|U", "ordinal", samples=200, seed=1)
    other = bootstrap_interval(batches, "C|B|Q|U", "ordinal", samples=200, seed=2)
    assert first == again
    assert first != other
    low, high = first
    assert low < point < high


def test_bootstrap_interval_is_none_when_alpha_is_undefined() -> None:
    assert bootstrap_interval([batch("b", {"a": "CU"})], "C|U") is None
    assert bootstrap_interval([batch("b", {"a": "CC", "b": "CC"})], "C|U") is None


def test_bootstrap_takes_fewer_resamples_only_for_huge_data() -> None:
    assert bootstrap_resamples(500, 1000) == 1000
    assert bootstrap_resamples(100_000, 1000) == 100
    assert bootstrap_resamples(10_000_000, 1000) == 100  # never below the floor
    assert bootstrap_resamples(0, 1000) == 0


def test_pairwise_alpha_uses_samples_both_annotated() -> None:
    batches = [batch("b1", {"a": "CCUU", "b": "CUUU"}), batch("b2", {"a": "CUC", "c": "CUU"})]
    pairs = {tuple(entry["annotators"]): entry for entry in pairwise_alpha(batches, "C|U")}
    assert set(pairs) == {("a", "b"), ("a", "c")}
    assert pairs[("a", "b")]["alpha"] == pytest.approx(8 / 15)
    assert pairs[("a", "b")]["units"] == 4
    assert pairs[("a", "c")]["alpha"] == pytest.approx(4 / 9)


def test_pairwise_alpha_matches_krippendorff_on_random_data() -> None:
    batches = random_batches(seed=11, count=8)
    annotators, _, matrix = reliability_matrix(batches, "C+B|Q|U")
    for entry in pairwise_alpha(batches, "C+B|Q|U", "interval"):
        rows = matrix[[annotators.index(name) for name in entry["annotators"]]]
        shared = rows[:, ~np.isnan(rows).any(axis=0)]
        assert entry["units"] == shared.shape[1]
        if entry["alpha"] is not None:
            assert entry["alpha"] == pytest.approx(krippendorff.alpha(shared, level_of_measurement="interval"))


# --------------------------------------------------------------------------- spans


SPANS_A = {1: [(0, 5, "U"), (10, 15, "B")]}
SPANS_B = {1: [(0, 5, "U"), (10, 14, "B"), (20, 25, "Q")]}


def test_exact_span_f1_by_hand() -> None:
    result = span_f1(SPANS_A, SPANS_B, "exact")
    overall = result["overall"]
    assert (overall["precision"], overall["recall"]) == pytest.approx((1 / 2, 1 / 3))
    assert overall["f1"] == pytest.approx(0.4)
    assert (overall["spans_a"], overall["spans_b"]) == (2, 3)
    assert result["per_label"]["U"]["f1"] == pytest.approx(1.0)
    assert result["per_label"]["B"]["f1"] == 0.0
    assert result["per_label"]["Q"] == {"precision": None, "recall": 0.0, "f1": 0.0, "spans_a": 0, "spans_b": 1}
    assert list(result["per_label"]) == ["B", "Q", "U"]


def test_overlap_span_f1_by_hand() -> None:
    result = span_f1(SPANS_A, SPANS_B, "overlap")
    assert (result["overall"]["precision"], result["overall"]["recall"]) == pytest.approx((1.0, 2 / 3))
    assert result["overall"]["f1"] == pytest.approx(0.8)
    assert result["per_label"]["B"]["f1"] == pytest.approx(1.0)


def test_span_f1_is_symmetric() -> None:
    for mode in ("exact", "overlap"):
        forward, backward = span_f1(SPANS_A, SPANS_B, mode), span_f1(SPANS_B, SPANS_A, mode)
        assert forward["overall"]["f1"] == pytest.approx(backward["overall"]["f1"])
        assert forward["overall"]["precision"] == pytest.approx(backward["overall"]["recall"])


def test_span_f1_per_label_needs_the_same_category() -> None:
    result = span_f1({1: [(0, 5, "U")]}, {1: [(0, 5, "B")]}, "exact")
    assert result["overall"]["f1"] == pytest.approx(1.0)
    assert result["per_label"]["U"]["f1"] == 0.0


def test_span_f1_compares_within_a_sample_and_ignores_unlabelled_spans() -> None:
    result = span_f1({1: [(0, 5, "U"), (7, 9, None)]}, {2: [(0, 5, "U")]}, "overlap")
    assert result["overall"]["f1"] == 0.0
    assert result["overall"]["spans_a"] == 1
    assert span_f1({}, {}, "exact")["overall"]["f1"] is None
    with pytest.raises(ValueError, match="unknown span mode 'fuzzy'"):
        span_f1({}, {}, "fuzzy")


def test_pairwise_span_f1_covers_every_pair_of_a_batch() -> None:
    spans = BatchSpans("b", ["a", "b", "c"], {1: "x" * 30}, {("a", 1): SPANS_A[1], ("b", 1): SPANS_B[1]})
    entries = {tuple(entry["annotators"]): entry for entry in pairwise_span_f1([spans], "exact")}
    assert set(entries) == {("a", "b"), ("a", "c"), ("b", "c")}
    assert entries[("a", "b")]["overall"]["f1"] == pytest.approx(0.4)
    assert entries[("b", "c")]["overall"]["f1"] == 0.0


def test_summary_tokens_use_code_point_offsets() -> None:
    text = "🌉 bridge  reopened 😀!"
    tokens = summary_tokens(text)
    assert [text[start:end] for start, end in tokens] == ["🌉", "bridge", "reopened", "😀!"]
    assert tokens[0] == (0, 1)


def test_token_alpha_by_hand_with_characters_outside_the_bmp() -> None:
    # Tokens 🌉 | b | c. Annotator a marks "b" as U; annotator b marks "b c" as U, and a benign
    # span over nothing of note. Token values: a = C U C, b = C U U -> (C,C) (U,U) (C,U) = 4/9.
    summary = "🌉 b c"
    spans = BatchSpans(
        "b1",
        ["a", "b"],
        {7: summary},
        {("a", 7): [(2, 3, "U")], ("b", 7): [(2, 5, "U"), (3, 4, "B"), (0, 1, None)]},
    )
    result = token_alpha([spans])
    assert result.alpha == pytest.approx(4 / 9)
    assert (result.units, result.annotators) == (3, 2)
    assert result.per_batch[0]["alpha"] == pytest.approx(4 / 9)


def test_token_alpha_worst_category_wins_on_a_token() -> None:
    spans = BatchSpans(
        "b1", ["a", "b"], {1: "one two"}, {("a", 1): [(0, 3, "B"), (2, 5, "U")], ("b", 1): [(0, 7, "Q")]}
    )
    # a: one -> U (worst of B and U), two -> U; b: Q, Q. With C+B|Q+U everyone agrees: only one value.
    assert token_alpha([spans], "C|B|Q|U").alpha == pytest.approx(
        krippendorff.alpha([[3, 3], [2, 2]], level_of_measurement="nominal")
    )
    merged = token_alpha([spans], "C+B|Q+U")
    assert merged.alpha is None
    assert merged.reason.startswith("only one value occurs: Q+U")


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


def straightforward_alpha(counts: np.ndarray, groups: int, level: str) -> float | None:
    counts = counts[counts.sum(axis=1) >= 2]
    if len(counts) == 0 or np.count_nonzero(counts.sum(axis=0)) < 2:
        return None
    value = float(krippendorff.alpha(value_counts=counts, value_domain=np.arange(groups), level_of_measurement=level))
    return value if np.isfinite(value) else None


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
        for batch, entry in zip(batches, per_batch, strict=True):
            expected = straightforward_alpha(value_counts(batch, parsed), len(parsed.groups), level)
            if most <= 3:  # coincidences are whole or half numbers: the same float, bit for bit
                assert entry["alpha"] == expected, (batch.name, level)
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


WORDS = ["a", "bb", "🌉", "ccc", "d\u00a0e", "f\u2003g", "\x1c", "h\ti", "\n", "😀!", ""]


def random_span_batches(seed: int, most: int) -> list[BatchSpans]:
    rng = random.Random(seed)
    people = [f"p{index}" for index in range(6)]
    batches = []
    for index in range(rng.randint(1, 6)):
        roster = rng.sample(people, rng.randint(1, most))
        summaries = {key: " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 9))) for key in range(rng.randint(0, 6))}
        spans: dict[tuple[str, object], list] = {}
        for person in people:  # people outside the roster and samples outside the batch are ignored
            for key in [*summaries, "elsewhere"]:
                length = len(summaries.get(key, "xyz")) + 2
                marked = [
                    (start, start + rng.randint(-2, 7), rng.choice(["B", "Q", "U", "C", None]))
                    for start in (rng.randint(0, length) for _ in range(rng.choice([0, 0, 1, 2, 3])))
                ]
                if marked:
                    spans[(person, key)] = marked + ([marked[0]] if rng.random() < 0.2 else [])
        batches.append(BatchSpans(f"s{index}", roster, summaries, spans))
    return batches


def straightforward_token_alpha(batches: list[BatchSpans], scheme: str) -> dict:
    """Token alpha as it was computed: a loop over summaries, annotators and spans, krippendorff per batch."""
    parsed = parse_scheme(scheme)
    lookup = parsed.lookup()
    per_batch, everything = [], []
    for spans in batches:
        roster = list(dict.fromkeys(spans.annotators))
        parts = []
        for key, text in spans.summaries.items():
            tokens = np.array(summary_tokens(text), dtype=np.int64).reshape(-1, 2)
            counts = np.zeros((len(tokens), len(parsed.groups)), dtype=np.int64)
            for annotator in roster:
                codes = np.zeros(len(tokens), dtype=np.int64)
                for start, end, category in spans.spans.get((annotator, key), []):
                    if category is not None:
                        covered = (tokens[:, 0] < end) & (tokens[:, 1] > start)
                        codes[covered] = np.maximum(codes[covered], CODE[category])
                values = lookup[codes]
                for row, value in enumerate(values):
                    if value >= 0:
                        counts[row, value] += 1
            parts.append(counts)
        counts = np.concatenate(parts) if parts else np.zeros((0, len(parsed.groups)), dtype=np.int64)
        everything.append(counts)
        per_batch.append(straightforward_alpha(counts, len(parsed.groups), "nominal"))
    pooled = straightforward_alpha(np.concatenate(everything), len(parsed.groups), "nominal") if everything else None
    return {"alpha": pooled, "per_batch": per_batch}


@pytest.mark.parametrize("most", [3, 5])
def test_token_alpha_equals_the_straightforward_loop(most: int) -> None:
    for seed in range(40):
        batches = random_span_batches(seed, most)
        for scheme in ("C|B|Q|U", "C+B|Q+U", "C|U"):
            fast = token_alpha(batches, scheme)
            slow = straightforward_token_alpha(batches, scheme)
            values = [fast.alpha, *(entry["alpha"] for entry in fast.per_batch)]
            expected = [slow["alpha"], *slow["per_batch"]]
            if most <= 3:
                assert values == expected, (seed, scheme)
            else:
                assert values == [None if value is None else pytest.approx(value, rel=1e-12) for value in expected]


def test_token_bounds_equal_summary_tokens_for_every_kind_of_whitespace() -> None:
    spaces = "".join(chr(code) for code in range(0x3001) if chr(code).isspace())
    texts = ["", " ", "a", f"x{spaces}y", "🌉 b\u00a0c\u2028d", *(" ".join(random.Random(n).choices(WORDS, k=8)) for n in range(20))]
    starts, ends, text_starts = _token_bounds(texts)
    found = [[] for _ in texts]
    for start, end in zip(starts, ends, strict=True):
        text = int(np.searchsorted(text_starts, start, side="right")) - 1
        found[text].append((int(start - text_starts[text]), int(end - text_starts[text])))
    assert found == [summary_tokens(text) for text in texts]


# Words of scripts without spaces (one token a character, marks kept with theirs), beside other words, marks
# opening a run or following a space, CJK punctuation, a middle dot (a Latin token), Hangul (whole words).
SCRIPT_WORDS = [
    "北京", "地铁。", "「安全」", "カﾞ", "น้ำท่วม", "ສະບາຍດີ", "ខ្មែរ", "မြန်မာ", "葛\U000e0100", "ー", "・",
    "new", "2025年", "l·l", "서울", "\u0e48x", "\u0301", "\u200d北", "a\u0301北\u0301b", "😀北", "\n", "", "中\u3000文",
]


def test_token_bounds_equal_summary_tokens_in_scripts_without_spaces(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "北京new 地铁。น้ำa"
    assert [text[start:end] for start, end in summary_tokens(text)] == ["北", "京", "new", "地", "铁", "。", "น้ำ", "a"]
    rng = random.Random(7)
    texts = ["北", "\u0301北", *("".join(rng.choices([*SCRIPT_WORDS, " "], k=rng.randint(0, 12))) for _ in range(300))]
    starts, ends, text_starts = _token_bounds(texts)
    found = [[] for _ in texts]
    for start, end in zip(starts, ends, strict=True):
        text = int(np.searchsorted(text_starts, start, side="right")) - 1
        found[text].append((int(start - text_starts[text]), int(end - text_starts[text])))
    assert found == [summary_tokens(text) for text in texts]
    monkeypatch.setitem(globals(), "WORDS", SCRIPT_WORDS)  # random_span_batches draws its summaries from these
    for seed in range(20):
        batches = random_span_batches(seed, 3)
        for scheme in ("C|B|Q|U", "C+B|Q+U"):
            fast = token_alpha(batches, scheme)
            slow = straightforward_token_alpha(batches, scheme)
            assert [fast.alpha, *(entry["alpha"] for entry in fast.per_batch)] == [slow["alpha"], *slow["per_batch"]]


def straightforward_pairwise_span_f1(batches: list[BatchSpans], mode: str) -> list[dict]:
    """Every pair's span_f1 over the samples of the batches both annotated, as the module used to compute it."""
    mine: dict[tuple[str, str], tuple[dict, dict]] = {}
    for spans in batches:
        for first, second in itertools.combinations(list(dict.fromkeys(spans.annotators)), 2):
            spans_a, spans_b = mine.setdefault((first, second), ({}, {}))
            for key in spans.summaries:
                spans_a[(spans.name, key)] = list(spans.spans.get((first, key), []))
                spans_b[(spans.name, key)] = list(spans.spans.get((second, key), []))
    return [{"annotators": [a, b], **span_f1(sa, sb, mode)} for (a, b), (sa, sb) in mine.items()]


def test_pairwise_span_f1_equals_span_f1_of_each_pair() -> None:
    for seed in range(60):
        batches = random_span_batches(seed, 5)
        for mode in ("exact", "overlap"):
            assert pairwise_span_f1(batches, mode) == straightforward_pairwise_span_f1(batches, mode), (seed, mode)
        both = pairwise_span_agreement(batches)
        assert [{"annotators": entry["annotators"], **entry["overlap"]} for entry in both] == pairwise_span_f1(
            batches, "overlap"
        )


def test_bootstrap_intervals_of_several_levels_equal_one_call_per_level() -> None:
    batches = random_batches(seed=9, count=8)
    together = bootstrap_intervals(batches, "C+B|Q|U", LEVELS, samples=80, seed=4)
    assert together == {level: bootstrap_interval(batches, "C+B|Q|U", level, samples=80, seed=4) for level in LEVELS}
    assert bootstrap_intervals([batch("b", {"a": "CC", "b": "CC"})], "C|U", LEVELS) == dict.fromkeys(LEVELS)
