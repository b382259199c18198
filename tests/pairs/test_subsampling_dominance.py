"""R > 1 says which class dominates the counted items, from the signs; and the H share expected of a selection
whose pool has another predicted mix than the counts (both worked by hand)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.template.loader import render_to_string

from annotate.pairmath.subsampling import selection_balance, selection_h_share, subsampling_ratio
from annotate.views.pairs.rounds.words import ratio_context


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_r_above_one_with_tp_below_fp_says_actual_h_dominates() -> None:
    # TP=33 FP=42 TN=3 FN=42: R = (3-42)/(33-42) = -39/-9 = 13/3 = 4.333 > 1.
    # Actual H = TP+FN = 75, actual N = TN+FP = 45: H dominates. Predicted N is 42 H and 3 N (mostly H).
    ratio = subsampling_ratio(33, 42, 3, 42)
    assert ratio.r == pytest.approx(13 / 3) and ratio.action == "keep_share_of_n"
    assert ratio.keep_predicted_h == 1.0 and ratio.keep_predicted_n == pytest.approx(3 / 13)
    # Kept: H = 33 + 42*3/13 = 42.69, N = 42 + 3*3/13 = 42.69; balanced as with the other sign.
    assert 33 + 42 * 3 / 13 == pytest.approx(42 + 3 * 3 / 13)
    assert ratio.promised_h_share() == pytest.approx(0.5)
    reason = ratio.reason or ""
    assert "actual H dominates the counted items (75 H against 45 N: TP + FN > TN + FP)" in reason
    assert "predicted N is mostly H (FN > TN)" in reason and "removes more H than N" in reason
    assert "actual N" not in reason
    assert "keep all predicted-H items and a share 1/R = 0.2308 of the predicted-N items" in reason


def test_r_above_one_with_tp_above_fp_says_actual_n_dominates() -> None:
    # TP=50 FP=10 TN=70 FN=10: R = 60/40 = 1.5. Actual N = 80, actual H = 60: N dominates; predicted N 70 N, 10 H.
    ratio = subsampling_ratio(50, 10, 70, 10)
    reason = ratio.reason or ""
    assert "actual N already dominates the counted items (80 N against 60 H: TN + FP > TP + FN)" in reason
    assert "predicted N is mostly N (TN > FN)" in reason and "removes more N than H" in reason
    assert "actual H dominates" not in reason


def test_another_tp_below_fp_case_by_hand() -> None:
    # TP=10 FP=30 TN=5 FN=40: R = (5-40)/(10-30) = 1.75; actual H = 50 against actual N = 35.
    ratio = subsampling_ratio(10, 30, 5, 40)
    assert ratio.r == pytest.approx(1.75) and ratio.action == "keep_share_of_n"
    assert "actual H dominates the counted items (50 H against 35 N" in (ratio.reason or "")


def test_the_command_and_the_panel_give_the_reason_of_the_sign() -> None:
    text = run("subsampling_ratio", "--tp", "33", "--fp", "42", "--tn", "3", "--fn", "42")
    assert "R from counts (TN-FN)/(TP-FP) = 4.3333" in text
    assert "actual H dominates the counted items (75 H against 45 N" in text
    assert "already dominates" not in text
    data = json.loads(run("subsampling_ratio", "--tp", "33", "--fp", "42", "--tn", "3", "--fn", "42", "--json"))
    assert data["action"] == "keep_share_of_n" and "actual H dominates" in data["reason"]
    # The panel the wizard and the round page include shows the service's reason.
    panel = render_to_string("annotate/pairs/_ratio.html",
                             {"ratio": ratio_context(subsampling_ratio(33, 42, 3, 42).as_dict())})
    assert "actual H dominates the counted items (75 H against 45 N" in panel


def test_expected_share_of_a_selection_by_hand() -> None:
    # Counts TP=33 FP=42 TN=3 FN=42. Drawn: 7 predicted H, 2 predicted N.
    # Each predicted-H item is H with chance 33/75, each predicted-N one with 42/45:
    # (7*33/75 + 2*42/45)/9 = (3.08 + 1.8667)/9 = 4.9467/9 = 0.54963.
    assert selection_h_share(33, 42, 3, 42, 7, 2) == pytest.approx((7 * 33 / 75 + 2 * 42 / 45) / 9)
    assert selection_h_share(33, 42, 3, 42, 7, 2) == pytest.approx(0.549630, abs=1e-6)
    # Drawn in the counts' kept mix (75 : 45*3/13, so 13*75 : 45*3 = 325 : 45 = 65 : 9): the promised 50%.
    assert selection_h_share(33, 42, 3, 42, 65, 9) == pytest.approx(0.5)
    assert selection_h_share(33, 42, 3, 42, 0, 0) is None
    # No counted item predicted N: no rate for predicted-N items.
    assert selection_h_share(10, 5, 0, 0, 3, 1) is None
    assert selection_h_share(10, 5, 0, 0, 3, 0) == pytest.approx(10 / 15)


def test_selection_balance_names_both_mixes_and_keeps_the_promise() -> None:
    # The review's case: pool after the filters 7 predicted H : 8 predicted N, counts 75 : 45; R = 4.333 keeps all
    # 7 predicted H and round(8 * 3/13) = 2 predicted N; drawn 7 and 2.
    balance = selection_balance(subsampling_ratio(33, 42, 3, 42), 7, 8, 7, 2)
    assert balance is not None
    assert balance["promised_h_share"] == pytest.approx(0.5)
    assert balance["expected_h_share"] == pytest.approx(0.549630, abs=1e-6)
    assert (balance["counted_predicted_h"], balance["counted_predicted_n"]) == (75, 45)
    assert (balance["pool_predicted_h"], balance["pool_predicted_n"]) == (7, 8)
    text = balance["explanation"]
    assert "R balances the counted items, whose predicted mix is 75 H : 45 N" in text
    assert "the pool after the filters holds 7 predicted H : 8 predicted N, a different mix" in text
    assert "(7 × 33/75 + 2 × 42/45) / 9 = 54.96% H, against the promised 50.00%" in text
    # The same mix as the counts: said so.
    same = selection_balance(subsampling_ratio(33, 42, 3, 42), 150, 90, 150, 21)
    assert same is not None and "holds 150 predicted H : 90 predicted N, the same mix." in same["explanation"]
    # A random round promises nothing, and expects nothing either.
    assert selection_balance(subsampling_ratio(3, 1, 2, 1), 4, 4, 4, 4) is None
