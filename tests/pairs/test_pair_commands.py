"""The subsampling_ratio and pair_agreement commands: JSON, readable text and bad input."""

from __future__ import annotations

import datetime as dt
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotate.models import PairItem, PairJudgement, Project
from annotate.services.pairs.agreement import pair_agreement
from tests.conftest import make_user
from tests.pairs.conftest import make_pair_items


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


# ----------------------------------------------------------------------------- subsampling_ratio

def test_subsampling_ratio_json_has_the_contract_keys() -> None:
    # R = (30-15)/(40-10) = 0.5; alpha = 40/55, beta = 30/40, gamma = 40/50.
    data = json.loads(run("subsampling_ratio", "--tp", "40", "--fp", "10", "--tn", "30", "--fn", "15", "--json"))
    assert set(data) == {
        "R", "closed_form", "alpha", "beta", "gamma", "keep_predicted_h", "keep_predicted_n", "reason",
        "action", "tp", "fp", "tn", "fn",
    }
    assert data["R"] == 0.5 and data["closed_form"] == pytest.approx(0.5)
    assert data["alpha"] == pytest.approx(40 / 55) and data["beta"] == 0.75 and data["gamma"] == 0.8
    assert (data["keep_predicted_h"], data["keep_predicted_n"]) == (0.5, 1.0)
    assert data["action"] == "keep_share_of_h"
    assert (data["tp"], data["fp"], data["tn"], data["fn"]) == (40, 10, 30, 15)


def test_subsampling_ratio_json_nulls_when_undefined() -> None:
    # 7 labelled items < 20.
    data = json.loads(run("subsampling_ratio", "--tp", "3", "--fp", "1", "--tn", "2", "--fn", "1", "--json"))
    assert data["R"] is None and data["closed_form"] is None and data["action"] == "random_too_few"
    assert "fewer than min_counts = 20" in data["reason"]
    # The same counts with --min-counts 5 give R = (2-1)/(3-1) = 0.5.
    data = json.loads(
        run("subsampling_ratio", "--tp", "3", "--fp", "1", "--tn", "2", "--fn", "1", "--min-counts", "5", "--json")
    )
    assert data["R"] == 0.5


def test_subsampling_ratio_with_both_groups_h_majority_gives_r_0_and_the_formulas_value_in_words() -> None:
    # (5-25)/(40-10) = -0.667 < 0 with TP > FP and FN > TN: DESIGN.md keeps no predicted H, R = 0.
    data = json.loads(run("subsampling_ratio", "--tp", "40", "--fp", "10", "--tn", "5", "--fn", "25", "--json"))
    assert data["R"] == 0.0 and data["action"] == "keep_no_h"
    assert (data["keep_predicted_h"], data["keep_predicted_n"]) == (0.0, 1.0)
    assert "(TN - FN)/(TP - FP) = (5 - 25)/(40 - 10) = -0.6667 < 0" in data["reason"]
    assert "R = 0: keep no predicted-H item" in data["reason"]
    text = run("subsampling_ratio", "--tp", "40", "--fp", "10", "--tn", "5", "--fn", "25")
    assert "R = 0.0000   ((TN-FN)/(TP-FP) = -0.6667 < 0: see Why)" in text
    assert "R from counts (TN-FN)/(TP-FP) = -0.6667" not in text  # the negative value is never shown as R
    # Both N-majority keeps the formula's value as R (DESIGN.md gives none): (40-5)/(10-30) = -1.75.
    data = json.loads(run("subsampling_ratio", "--tp", "10", "--fp", "30", "--tn", "40", "--fn", "5", "--json"))
    assert data["R"] == -1.75 and data["action"] == "keep_all"


def test_subsampling_ratio_text_explains_counts_rates_r_and_action() -> None:
    # R = (70-10)/(50-10) = 1.5 > 1: keep all predicted H and 1/1.5 = 66.67% of predicted N.
    text = run("subsampling_ratio", "--tp", "50", "--fp", "10", "--tn", "70", "--fn", "10")
    assert "TP = 50 (H predicted H)" in text and "TN = 70 (N predicted N)" in text
    assert "alpha = TP/(TP+FN) = 0.8333" in text
    assert "beta  = TN/(TN+FP) = 0.8750" in text
    assert "gamma = TP/(TP+FP) = 0.8333" in text
    assert "R from counts (TN-FN)/(TP-FP) = 1.5000" in text
    assert "R closed form from alpha, beta, gamma = 1.5000" in text
    assert "Action: keep_share_of_n: keep 100.00% of predicted-H items and 66.67% of predicted-N items" in text
    assert "H share promised: 50.00%" in text
    assert "actual N already dominates" in text


def test_subsampling_ratio_text_says_undefined_closed_form() -> None:
    text = run("subsampling_ratio", "--tp", "10", "--fp", "10", "--tn", "30", "--fn", "20")
    assert "R from counts (TN-FN)/(TP-FP) = undefined" in text
    assert "R closed form from alpha, beta, gamma = undefined" in text
    assert "no_subsampling_gamma_half" in text and "2*gamma - 1 = 0 (TP = FP)" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tp", "-3", "--fp", "1", "--tn", "1", "--fn", "1"], "--tp must be a whole number >= 0, not '-3'"),
        (["--tp", "3", "--fp", "x", "--tn", "1", "--fn", "1"], "--fp must be a whole number >= 0, not 'x'"),
        (["--tp", "3", "--fp", "1", "--tn", "1.5", "--fn", "1"], "--tn must be a whole number >= 0, not '1.5'"),
        (["--tp", "3", "--fp", "1", "--tn", "1", "--fn", "1", "--min-counts", "-1"], "--min-counts must be"),
    ],
)
def test_subsampling_ratio_bad_input_names_the_option(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message.replace(".", r"\.")):
        run("subsampling_ratio", *args)


def test_subsampling_ratio_requires_every_count() -> None:
    with pytest.raises(CommandError, match="--fn"):
        run("subsampling_ratio", "--tp", "3", "--fp", "1", "--tn", "1")


# ----------------------------------------------------------------------------- pair_agreement

@pytest.fixture
def judged(pairs_project: Project) -> Project:
    """Round 1: three finished items judged by four judges, one of them blocked later in a test."""
    judges = [make_user(f"judge{index}") for index in range(4)]
    votes = [("HHHH", "consensus", "H"), ("NNHN", "consensus", "N"), ("HNHN", "none", "")]
    start = timezone.now() - dt.timedelta(hours=1)
    for item, (labels, state, label) in zip(make_pair_items(pairs_project, 3), votes, strict=True):
        for order, (judge, answer) in enumerate(zip(judges, labels, strict=True)):
            PairJudgement.objects.create(
                item=item, judge=judge, round=item.round, label=answer,
                served_at=start + dt.timedelta(minutes=order), answered_at=start + dt.timedelta(minutes=order, seconds=15),
            )
        PairItem.objects.filter(pk=item.pk).update(state=state, label=label)
    return pairs_project


def test_pair_agreement_json(judged: Project) -> None:
    data = json.loads(run("pair_agreement", "--project", "pairs", "--json"))
    # Consensus 2 of 3; >= 80% and unanimous: the HHHH item only.
    assert data["items"] == 3
    assert (data["consensus"], data["agree80"], data["unanimous"], data["no_consensus"]) == (66.67, 33.33, 33.33, 33.33)
    # Nominal alpha over 3 items x 4 judges, by hand: values H=7, N=5, n=12 pairable values.
    # Observed disagreement: per item, mismatching ordered pairs / (m - 1): 0 + 2*3*1/3 + 2*2*2/3 = 2 + 8/3 = 14/3;
    # D_o = (14/3) / 12 = 7/18. Expected: 2*7*5 / (12*11) = 70/132. alpha = 1 - (7/18)/(70/132) = 1 - 924/1260.
    assert data["alpha"] == pytest.approx(1 - 924 / 1260)
    assert [entry["round"] for entry in data["rounds"]] == [1]
    round_data = json.loads(run("pair_agreement", "--project", "pairs", "--round", "1", "--json"))
    assert round_data["round"] == 1 and round_data["items"] == 3


def test_pair_agreement_text(judged: Project) -> None:
    text = run("pair_agreement", "--project", "pairs")
    assert "Project pairs, all rounds: 3 items with judging finished" in text
    assert f"alpha (Krippendorff, nominal) = {1 - 924 / 1260:.4f}" in text
    assert "consensus 66.67%, >= 80% agreement 33.33%, unanimous 33.33%, no consensus 33.33%" in text
    # The per-round table: round, items, alpha, consensus, >= 80%, unanimous, none.
    assert text.splitlines()[-2].split() == ["round", "items", "alpha", "consensus", ">=80%", "unanimous", "none"]
    assert text.splitlines()[-1].split() == ["1", "3", f"{1 - 924 / 1260:.4f}", "66.67%", "33.33%", "33.33%", "33.33%"]


def test_pair_agreement_counts_only_counted_judgements(judged: Project) -> None:
    # Blocking judge2 (the lone H on the NNHN item and an H on the HNHN item): their votes stop counting.
    PairJudgement.objects.filter(judge__username="judge2").update(counted=False)
    data = json.loads(run("pair_agreement", "--project", "pairs", "--json"))
    # Now HHH, NNN, HN: agree80 and unanimous 2 of 3.
    assert data["unanimous"] == 66.67 and data["agree80"] == 66.67


def test_pair_agreement_text_without_figures_gives_the_reason(pairs_project: Project) -> None:
    text = run("pair_agreement", "--project", "pairs")
    assert "alpha (Krippendorff, nominal) = undefined (no item has finished judging" in text
    assert "consensus -, >= 80% agreement -" in text


def test_pair_agreement_unknown_project_is_named(pairs_project: Project) -> None:
    with pytest.raises(CommandError, match="no project with slug 'nosuch'"):
        run("pair_agreement", "--project", "nosuch")


def test_pair_agreement_unknown_round_is_named(judged: Project) -> None:
    with pytest.raises(CommandError, match="project 'pairs' has no round 4"):
        run("pair_agreement", "--project", "pairs", "--round", "4")


def test_pair_agreement_bad_round_number_is_named(judged: Project) -> None:
    with pytest.raises(CommandError, match="--round must be a positive whole number, not 'x'"):
        run("pair_agreement", "--project", "pairs", "--round", "x")


def test_pair_agreement_refuses_a_span_project(project: Project) -> None:
    with pytest.raises(CommandError, match="project 'demo' is a spans project, not a pairs project"):
        run("pair_agreement", "--project", "demo")


def test_pair_agreement_json_is_the_service_report(judged: Project) -> None:
    assert json.loads(run("pair_agreement", "--project", "pairs", "--json")) == json.loads(
        json.dumps(pair_agreement(judged))
    )
