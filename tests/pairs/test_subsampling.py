"""The subsampling ratio R (HaDes eq. 1): every case of DESIGN.md worked by hand, and the closed form on random counts."""

from __future__ import annotations

import random

import numpy as np
import pytest

from annotate.pairmath.subsampling import promised_h_share, split_spread, subsampled_class, subsampling_ratio


def kept_h_and_n(tp: int, fp: int, tn: int, fn: int, keep_h: float, keep_n: float) -> tuple[float, float]:
    """Expected actual H and N kept: keep_h of the predicted-H group (TP H, FP N), keep_n of predicted N (FN H, TN N)."""
    return keep_h * tp + keep_n * fn, keep_h * fp + keep_n * tn


def test_share_of_predicted_h_when_r_is_between_zero_and_one() -> None:
    # TP=40 FP=10 TN=30 FN=15 (95 items). R = (30-15)/(40-10) = 15/30 = 0.5.
    # alpha = 40/55, beta = 30/40 = 0.75, gamma = 40/50 = 0.8.
    ratio = subsampling_ratio(40, 10, 30, 15)
    assert ratio.action == "keep_share_of_h"
    assert ratio.r == 0.5
    assert ratio.alpha == pytest.approx(40 / 55) and ratio.beta == 0.75 and ratio.gamma == 0.8
    # Closed form: numerator -2*a*.75*.8 + a*.75 + .75*.8 + a*.8 - .8 = -1.2a + 1.55a - 0.2 = 0.35a - 0.2,
    # with a = 8/11: 2.8/11 - 2.2/11 = 0.6/11; denominator (1.6-1)*a*(0.25) = 0.15a = 1.2/11; R = 0.5.
    assert ratio.closed_form == pytest.approx(0.5)
    assert (ratio.keep_predicted_h, ratio.keep_predicted_n) == (0.5, 1.0)
    # Kept: H = 0.5*40 + 15 = 35, N = 0.5*10 + 30 = 35.
    assert kept_h_and_n(40, 10, 30, 15, 0.5, 1.0) == (35.0, 35.0)
    assert ratio.promised_h_share() == 0.5
    assert "keep a share R = 0.5 of the predicted-H items" in ratio.reason


def test_r_of_exactly_zero_keeps_no_predicted_h_and_is_not_negative_zero() -> None:
    # TP=10 FP=20 TN=15 FN=15: R = 0/(-10) = 0 (not -0.0); keeping only predicted N gives H 15 = N 15.
    ratio = subsampling_ratio(10, 20, 15, 15)
    assert ratio.action == "keep_share_of_h"
    assert ratio.r == 0.0 and str(ratio.r) == "0.0"
    assert (ratio.keep_predicted_h, ratio.keep_predicted_n) == (0.0, 1.0)
    assert ratio.closed_form == pytest.approx(0.0, abs=1e-12)
    assert ratio.promised_h_share() == 0.5


def test_r_of_exactly_one_keeps_everything() -> None:
    # TP=30 FP=10 TN=40 FN=20: R = 20/20 = 1; kept H = 30+20 = 50 = kept N = 10+40.
    ratio = subsampling_ratio(30, 10, 40, 20)
    assert ratio.action == "keep_share_of_h"
    assert ratio.r == 1.0 and ratio.closed_form == pytest.approx(1.0)
    assert (ratio.keep_predicted_h, ratio.keep_predicted_n) == (1.0, 1.0)


def test_r_above_one_keeps_all_predicted_h_and_share_one_over_r_of_predicted_n() -> None:
    # TP=50 FP=10 TN=70 FN=10: R = (70-10)/(50-10) = 60/40 = 1.5, so keep 1/R = 2/3 of predicted N.
    # Kept: H = 50 + (2/3)*10 = 56.67, N = 10 + (2/3)*70 = 56.67.
    ratio = subsampling_ratio(50, 10, 70, 10)
    assert ratio.action == "keep_share_of_n"
    assert ratio.r == 1.5 and ratio.closed_form == pytest.approx(1.5)
    assert ratio.keep_predicted_h == 1.0 and ratio.keep_predicted_n == pytest.approx(2 / 3)
    kept_h, kept_n = kept_h_and_n(50, 10, 70, 10, 1.0, 2 / 3)
    assert kept_h == pytest.approx(170 / 3) and kept_n == pytest.approx(170 / 3)
    assert "actual N already dominates" in ratio.reason and "1/R = 0.6667" in ratio.reason


def test_tp_equal_fp_is_gamma_half_and_no_subsampling() -> None:
    # TP=FP=10: gamma = 10/20 = 0.5; R = (30-20)/0 has no value, and neither has the closed form ((2*0.5-1) = 0).
    ratio = subsampling_ratio(10, 10, 30, 20)
    assert ratio.action == "no_subsampling_gamma_half"
    assert ratio.gamma == 0.5 and ratio.r is None and ratio.closed_form is None
    assert (ratio.keep_predicted_h, ratio.keep_predicted_n) == (1.0, 1.0)
    assert "cannot change the balance" in ratio.reason
    assert "2*gamma - 1 = 0 (TP = FP)" in ratio.reason
    # Keeping everything promises the counts' own share: H = 10+20 = 30 of 70.
    assert ratio.promised_h_share() == pytest.approx(30 / 70)


def test_nothing_predicted_h_is_the_tp_equal_fp_case_with_gamma_undefined() -> None:
    # TP=FP=0: gamma = 0/0 is undefined; no predicted-H group exists to subsample.
    ratio = subsampling_ratio(0, 0, 30, 10)
    assert ratio.action == "no_subsampling_gamma_half"
    assert ratio.gamma is None and ratio.r is None and ratio.closed_form is None
    assert "no item was predicted H" in ratio.reason
    assert "gamma is undefined (TP+FP = 0)" in ratio.reason


def test_negative_r_with_both_groups_h_majority_keeps_no_predicted_h() -> None:
    # TP=30 FP=10 (predicted H: 30 H vs 10 N), TN=5 FN=25 (predicted N: 25 H vs 5 N).
    # (5-25)/(30-10) = -20/20 = -1 < 0: both H-majority; DESIGN.md: keep no predicted H, R = 0.
    ratio = subsampling_ratio(30, 10, 5, 25)
    assert ratio.action == "keep_no_h"
    assert ratio.r == 0.0 and ratio.as_dict()["R"] == 0.0
    # The formula's own value stays visible: in the closed form (eq. 1), the reason, and counts_formula.
    assert ratio.closed_form == pytest.approx(-1.0) and ratio.counts_formula == -1.0
    assert (ratio.keep_predicted_h, ratio.keep_predicted_n) == (0.0, 1.0)
    assert "both predicted groups are H-majority" in ratio.reason
    assert "(TN - FN)/(TP - FP) = (5 - 25)/(30 - 10) = -1 < 0" in ratio.reason
    assert "R = 0: keep no predicted-H item" in ratio.reason
    # Only predicted N kept: 25 H of 30.
    assert ratio.promised_h_share() == pytest.approx(25 / 30)


def test_negative_r_with_both_groups_n_majority_keeps_all() -> None:
    # TP=10 FP=30 (predicted H: 10 H vs 30 N), TN=40 FN=5 (predicted N: 5 H vs 40 N).
    # R = (40-5)/(10-30) = 35/-20 = -1.75 < 0: both N-majority; keep everything.
    ratio = subsampling_ratio(10, 30, 40, 5)
    assert ratio.action == "keep_all"
    assert ratio.r == -1.75 and ratio.closed_form == pytest.approx(-1.75)
    assert (ratio.keep_predicted_h, ratio.keep_predicted_n) == (1.0, 1.0)
    assert "both predicted groups are N-majority" in ratio.reason


def test_fewer_labelled_items_than_min_counts_samples_at_random() -> None:
    # 3+1+2+1 = 7 labelled items < 20: R undefined even though (2-1)/(3-1) = 0.5 could be computed.
    ratio = subsampling_ratio(3, 1, 2, 1)
    assert ratio.action == "random_too_few"
    assert ratio.r is None and ratio.closed_form is None
    assert (ratio.keep_predicted_h, ratio.keep_predicted_n) == (1.0, 1.0)
    assert "only 7 labelled items, fewer than min_counts = 20" in ratio.reason
    assert "samples at random" in ratio.reason
    assert ratio.promised_h_share() is None
    # The same counts are enough with a lower threshold: R = 0.5.
    assert subsampling_ratio(3, 1, 2, 1, min_counts=7).r == 0.5
    # Exactly min_counts items is enough: 5+5+6+4 = 20 is not too few (TP = FP here, so it is the gamma case).
    assert subsampling_ratio(5, 5, 6, 4).action == "no_subsampling_gamma_half"


def test_no_actual_h_is_undefined() -> None:
    # TP+FN = 0: alpha = 0/0; R = (30-0)/(0-10) = -3 would be meaningless without any H item.
    ratio = subsampling_ratio(0, 10, 30, 0)
    assert ratio.action == "random_undefined"
    assert ratio.alpha is None and ratio.r is None and ratio.closed_form is None
    assert "no item is actually H (TP+FN = 0)" in ratio.reason


def test_no_actual_n_is_undefined() -> None:
    # TN+FP = 0: beta = 0/0.
    ratio = subsampling_ratio(20, 0, 0, 15)
    assert ratio.action == "random_undefined"
    assert ratio.beta is None and ratio.r is None
    assert "no item is actually N (TN+FP = 0)" in ratio.reason


def test_too_few_and_one_class_missing_names_both_reasons() -> None:
    ratio = subsampling_ratio(3, 0, 0, 2)
    assert ratio.action == "random_too_few"
    assert "only 5 labelled items" in ratio.reason and "no item is actually N" in ratio.reason


def test_closed_form_undefined_when_counts_still_settle_r_says_why() -> None:
    # FP=0: beta = 1 and gamma = 1 make the closed form 0/0, but R = (30-10)/(5-0) = 4 from the counts.
    ratio = subsampling_ratio(5, 0, 30, 10)
    assert ratio.action == "keep_share_of_n" and ratio.r == 4.0 and ratio.keep_predicted_n == 0.25
    assert ratio.closed_form is None
    assert ratio.closed_form_note == "The closed form's denominator (2*gamma - 1)*alpha*(1 - beta) is 0: 1 - beta = 0 (FP = 0)."
    assert ratio.closed_form_note in ratio.reason
    # TP=0: alpha = 0; R = (30-10)/(0-5) = -4, both N-majority.
    ratio = subsampling_ratio(0, 5, 30, 10)
    assert ratio.action == "keep_all" and ratio.r == -4.0 and ratio.closed_form is None
    assert "alpha = 0 (TP = 0)" in ratio.reason


def test_nothing_predicted_n_gives_r_zero_and_says_the_counts_cannot_vouch() -> None:
    # TN=FN=0: R = 0/(20-5) = 0; keep no predicted H and only predicted-N pool items.
    ratio = subsampling_ratio(20, 5, 0, 0)
    assert ratio.action == "keep_share_of_h" and ratio.r == 0.0
    assert "No item was predicted N (TN = FN = 0)" in ratio.reason


@pytest.mark.parametrize(
    ("counts", "name"),
    [((-1, 0, 0, 0), "tp"), ((0, -2, 0, 0), "fp"), ((0, 0, -3, 0), "tn"), ((0, 0, 0, -4), "fn"), ((1.5, 0, 0, 0), "tp")],
)
def test_bad_counts_raise_value_error_naming_the_count(counts: tuple, name: str) -> None:
    with pytest.raises(ValueError, match=f"^{name} must be a whole number >= 0"):
        subsampling_ratio(*counts)


def test_bad_min_counts_is_named() -> None:
    with pytest.raises(ValueError, match="^min_counts must be"):
        subsampling_ratio(1, 1, 1, 1, min_counts=-1)


def test_numpy_counts_are_accepted() -> None:
    ratio = subsampling_ratio(np.int64(40), np.int64(10), np.int64(30), np.int64(15))
    assert ratio.r == 0.5 and type(ratio.tp) is int


def test_as_dict_has_the_command_keys() -> None:
    data = subsampling_ratio(40, 10, 30, 15).as_dict()
    assert data == {
        "R": 0.5, "closed_form": pytest.approx(0.5), "alpha": pytest.approx(40 / 55), "beta": 0.75, "gamma": 0.8,
        "keep_predicted_h": 0.5, "keep_predicted_n": 1.0, "reason": data["reason"], "action": "keep_share_of_h",
        "tp": 40, "fp": 10, "tn": 30, "fn": 15,
    }


def test_closed_form_equals_r_from_counts_on_random_counts() -> None:
    rng = random.Random(20240509)
    compared = 0
    for _ in range(600):
        tp, fp, tn, fn = (rng.randint(0, 60) for _ in range(4))
        ratio = subsampling_ratio(tp, fp, tn, fn)
        if ratio.r is None:
            continue
        if ratio.closed_form is None:
            # Only the 0/0 cases of the closed form: TP = 0 or FP = 0 (TP = FP leaves R undefined too).
            assert tp == 0 or fp == 0
            continue
        # Independent: HaDes eq. 1 written out again from the rates.
        a, b, g = tp / (tp + fn), tn / (tn + fp), tp / (tp + fp)
        eq1 = (-2 * a * b * g + a * b + b * g + a * g - g) / ((2 * g - 1) * a * (1 - b))
        assert ratio.counts_formula == pytest.approx((tn - fn) / (tp - fp), abs=1e-12)
        assert ratio.closed_form == pytest.approx(eq1, rel=1e-12, abs=1e-12)
        assert ratio.closed_form == pytest.approx(ratio.counts_formula, rel=1e-9, abs=1e-9)
        # R is the formula's value, except 0 where both predicted groups are H-majority (DESIGN.md).
        assert ratio.r == (0.0 if ratio.action == "keep_no_h" else ratio.counts_formula)
        compared += 1
    assert compared > 300


def test_balancing_actions_promise_equal_expected_h_and_n_on_random_counts() -> None:
    rng = random.Random(7)
    balanced = 0
    for _ in range(600):
        tp, fp, tn, fn = (rng.randint(0, 60) for _ in range(4))
        ratio = subsampling_ratio(tp, fp, tn, fn)
        if ratio.action not in ("keep_share_of_h", "keep_share_of_n") or tn + fn == 0:
            continue
        kept_h, kept_n = kept_h_and_n(tp, fp, tn, fn, ratio.keep_predicted_h, ratio.keep_predicted_n)
        assert kept_h == pytest.approx(kept_n), (tp, fp, tn, fn)
        assert 0 <= ratio.keep_predicted_h <= 1 and 0 <= ratio.keep_predicted_n <= 1
        assert ratio.promised_h_share() == pytest.approx(0.5)
        balanced += 1
    assert balanced > 100


def test_promised_h_share_of_given_shares() -> None:
    # Keep half of predicted H (TP 40, FP 10) and all predicted N (FN 15, TN 30): H 35, N 35.
    assert promised_h_share(40, 10, 30, 15, 0.5, 1.0) == 0.5
    # Keep everything: H = 40+15 = 55 of 95.
    assert promised_h_share(40, 10, 30, 15, 1.0, 1.0) == pytest.approx(55 / 95)
    assert promised_h_share(0, 0, 0, 0, 1.0, 1.0) is None


def test_summed_split_counts_check_min_counts_against_the_items_behind_them() -> None:
    # 12 items counted 5 times: 60 predictions, but only 12 labelled items, fewer than min_counts = 20.
    summed = subsampling_ratio(20, 10, 20, 10, min_counts=20, items=12)
    assert summed.action == "random_too_few" and summed.r is None
    assert "only 12 labelled items, fewer than min_counts = 20" in (summed.reason or "")
    assert "each of the 12 items 5 times" in (summed.reason or "")
    # Enough items: R is the same as from the counts of one split in the same proportions.
    assert subsampling_ratio(40, 20, 40, 20, min_counts=20, items=24).r == subsampling_ratio(8, 4, 8, 4).r


@pytest.mark.parametrize("items", [-1, 61, True, 0])
def test_items_beyond_the_counts_total_are_refused_by_name(items: object) -> None:
    with pytest.raises(ValueError, match="items"):
        subsampling_ratio(20, 10, 20, 10, items=items)  # type: ignore[arg-type]


def test_split_spread_gives_each_splits_r_and_whether_they_thin_the_same_class() -> None:
    # R = 1.6 and R = 4 (the review's two seeds): both thin predicted N, by 1/1.6 and 1/4.
    spread = split_spread([(5, 10, 4, 12), (8, 9, 5, 9)])
    assert spread["r_per_split"] == [1.6, 4.0]
    assert (spread["r_low"], spread["r_high"], spread["subsampled"], spread["agree"]) == (1.6, 4.0, ["N"], True)
    # R = 0 from TN = FN and R = 0 from H-majority groups both keep no predicted H: the same class thinned.
    same = split_spread([(20, 5, 10, 10), (20, 5, 5, 10)])
    assert same["subsampled"] == ["H"] and same["agree"] is True
    assert same["r_per_split"] == [0.0, 0.0] and (same["r_low"], same["r_high"]) == (0.0, 0.0)
    # An H-majority split beside one that keeps a share of predicted H: R spans 0 to 0.5, never below 0.
    spread = split_spread([(20, 5, 5, 10), (40, 10, 30, 15)])
    assert spread["r_per_split"] == [0.0, 0.5] and (spread["r_low"], spread["r_high"]) == (0.0, 0.5)
    assert spread["agree"] is True
    # One split thins predicted H, another predicted N: they disagree.
    mixed = split_spread([(40, 10, 30, 15), (5, 10, 4, 12)])
    assert mixed["subsampled"] == ["H", "N"] and mixed["agree"] is False
    assert subsampled_class(subsampling_ratio(10, 10, 10, 10)) == "neither"
    assert subsampled_class(subsampling_ratio(1, 1, 1, 1)) == "random"
