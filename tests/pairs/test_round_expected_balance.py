"""The wizard, the round page, the API and ``pairs_round`` give R's reason by the sign of TP - FP, and the H share
expected of the drawn items beside the promised one, with both predicted mixes (worked by hand)."""

from __future__ import annotations

import json
from html import unescape
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import PairConfig, PairRound, Project
from annotate.services.pairs import rounds
from tests.conftest import login
from tests.pairs.factories_rounds import add_items, add_training, sign_head, store_detector
from tests.pairs.page_helpers import OPEN, WIZARD, text_of
from tests.pairs.test_rounds import round_three_project

pytestmark = pytest.mark.django_db

# round_three_project's round 3 (tests/pairs/test_rounds.py): counts TP=14 FP=2 TN=6 FN=2, R = 1/3. The pool after
# the filters is 7 predicted H : 8 predicted N, the counts' predicted mix 16 : 8. Size 6 draws 1 predicted H and 5
# predicted N, expected (1 * 14/16 + 5 * 2/8) / 6 = (0.875 + 1.25) / 6 = 0.354167, against the promised 0.5.
ROUND_THREE = {"size": 6, "low": 0.1, "high": 0.9, "paraphrase_max": 0.9, "drop_fraction": 1.0, "seed": 11}
EXPECTED = (1 * 14 / 16 + 5 * 2 / 8) / 6


def test_the_preview_expects_the_share_of_its_own_selection(pairs_project: Project) -> None:
    round_three_project(pairs_project)
    plan = rounds.preview_round(pairs_project, **ROUND_THREE)
    assert plan.promised_h_share == pytest.approx(0.5)
    balance = plan.selection_balance
    assert balance is not None
    assert (balance["pool_predicted_h"], balance["pool_predicted_n"]) == (7, 8)
    assert (balance["drawn_predicted_h"], balance["drawn_predicted_n"]) == (1, 5)
    assert (balance["counted_predicted_h"], balance["counted_predicted_n"]) == (16, 8)
    assert balance["expected_h_share"] == pytest.approx(EXPECTED) == pytest.approx(0.354167, abs=1e-6)
    assert "(1 × 14/16 + 5 × 2/8) / 6 = 35.42% H, against the promised 50.00%" in balance["explanation"]
    assert plan.as_dict()["expected_h_share"] == pytest.approx(EXPECTED)


def test_the_wizard_shows_the_promise_and_the_expected_share(pairs_project: Project, admin_user: Any) -> None:
    round_three_project(pairs_project)
    html = login(admin_user).get(WIZARD, {key: str(value) for key, value in ROUND_THREE.items()}).content.decode()
    block = text_of(html, r'(<dl class="figures" data-role="selection-balance">.*?</dl>)')
    assert text_of(block, r'data-figure="promised">(.*?)</dd>') == "50.00% H"
    assert text_of(block, r'data-figure="expected">(.*?)</dd>') == "35.42% H"
    note = text_of(html, r'data-role="expected-note">(.*?)</p>')
    assert "R balances the counted items, whose predicted mix is 16 H : 8 N" in note
    assert "the pool after the filters holds 7 predicted H : 8 predicted N, a different mix" in note


def test_the_round_page_the_api_and_the_command_give_the_expected_share(pairs_project: Project,
                                                                        admin_user: Any) -> None:
    round_three_project(pairs_project)
    out = StringIO()
    call_command("pairs_round", "--project", "pairs", "--preview", "--size", "6", "--seed", "11", "--low", "0.1",
                 "--high", "0.9", "--json", stdout=out)
    preview = json.loads(out.getvalue())
    assert preview["promised_h_share"] == pytest.approx(0.5)
    assert preview["expected_h_share"] == pytest.approx(EXPECTED)
    assert preview["ratio"]["selection"]["expected_h_share"] == pytest.approx(EXPECTED)

    rounds.create_round(pairs_project, admin_user, **ROUND_THREE)
    html = login(admin_user).get("/projects/pairs/pairs/rounds/3/").content.decode()
    assert text_of(html, r'data-figure="promised">(.*?)</dd>') == "50.00% H"  # the promise stays
    assert text_of(html, r'data-figure="expected">(.*?)</dd>') == "35.42% H"
    assert "7 predicted H : 8 predicted N, a different mix" in text_of(html, r'data-role="expected-note">(.*?)</p>')

    body = login(admin_user).get("/api/projects/pairs/pair-rounds/3/").json()
    assert body["promised_h_share"] == pytest.approx(0.5)
    assert body["expected_h_share"] == pytest.approx(EXPECTED)
    assert body["balance"]["promised_h_share"] == pytest.approx(0.5)
    assert body["balance"]["expected_h_share"] == pytest.approx(EXPECTED)
    assert "16 H : 8 N" in body["balance"]["expected_explanation"]
    listed = next(row for row in login(admin_user).get("/api/projects/pairs/pair-rounds/").json()
                  if row["number"] == 3)
    assert listed["expected_h_share"] == pytest.approx(EXPECTED)


def actual_h_dominates_project(project: Project) -> None:
    """Round 2 selected by detector 1 (predicted H exactly when t >= 0), whose consensus items give TP < FP.

    Round 2's consensus items: t = 1 (predicted H): 3 H, 5 N; t = -1 (predicted N): 9 H, 1 N. So TP = 3, FP = 5,
    TN = 1, FN = 9: R = (1 - 9)/(3 - 5) = 4 > 1, with actual H = 12 against actual N = 6.
    """
    PairConfig.objects.filter(project=project).update(min_counts=10)
    first = PairRound.objects.create(project=project, number=1, size=16, seed=1, status="closed")
    second = PairRound.objects.create(project=project, number=2, size=18, seed=2,
                                      detector=store_detector(project, 1, sign_head()), promised_h_share=0.5)
    add_training(project, {-2: (0, 8), 2: (8, 0)}, pair_round=first)
    add_training(project, {1: (3, 5), -1: (9, 1)}, pair_round=second)
    add_items(project, [-2.0] * 4 + [2.0] * 4)


def test_the_wizard_and_the_round_page_say_actual_h_dominates_when_tp_is_below_fp(pairs_project: Project,
                                                                                   admin_user: Any) -> None:
    actual_h_dominates_project(pairs_project)
    plan = rounds.preview_round(pairs_project, size=8, low=0.0, high=1.0, paraphrase_max=1.0, drop_fraction=0.0,
                                seed=5)
    assert plan.ratio is not None and (plan.ratio.tp, plan.ratio.fp, plan.ratio.tn, plan.ratio.fn) == (3, 5, 1, 9)
    assert plan.ratio.r == 4.0 and plan.ratio.action == "keep_share_of_n"
    said = "actual H dominates the counted items (12 H against 6 N: TP + FN > TN + FP)"
    html = unescape(login(admin_user).get(WIZARD, OPEN).content.decode())
    assert said in text_of(html, r'<p data-role="reason">(.*?)</p>')
    assert said in text_of(html, r'<tr data-step="subsampling">(.*?)</tr>')  # the funnel's row too
    assert "already dominates" not in html

    rounds.create_round(pairs_project, admin_user, size=8, low=0.0, high=1.0, paraphrase_max=1.0,
                        drop_fraction=0.0, seed=5)
    page = unescape(login(admin_user).get("/projects/pairs/pairs/rounds/3/").content.decode())
    assert said in text_of(page, r'<p data-role="reason">(.*?)</p>')
    assert "already dominates" not in page
