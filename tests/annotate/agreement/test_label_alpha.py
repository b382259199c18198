"""Agreement on worst-pooled labels (pure module, no database): label schemes, alpha worked out by hand, undefined
alpha with its reason, against the `krippendorff` package, the bootstrap interval and pairwise alpha.

Hand-worked values use Krippendorff's coincidence form: with o the coincidence
matrix, n_c its column sums and n their total,
alpha = 1 - (n - 1) * sum(o_ck d_ck) / sum(n_c n_k d_ck).
"""

from __future__ import annotations

import itertools
import re

import krippendorff
import numpy as np
import pytest

from annotate.agreement import (
    AGGREGATES,
    LEVELS,
    BatchLabels,
    Scheme,
    SchemeError,
    bootstrap_interval,
    bootstrap_resamples,
    compute_alpha,
    pairwise_alpha,
    parse_scheme,
    reliability_matrix,
)
from tests.annotate.agreement.batches import SCHEMES, batch, random_batches

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


