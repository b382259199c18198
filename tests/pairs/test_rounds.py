"""Rounds: round 1 at random, later rounds through the detector funnel (counts worked out by hand), reports, jobs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, brier_score_loss, f1_score, precision_score, recall_score, roc_auc_score

from annotate.models import Job, PairConfig, PairDetector, PairItem, PairRound, Project
from annotate.pairmath.subsampling import subsampling_ratio
from annotate.services.pairs import rounds
from annotate.services.pairs.detector import CV_REPEATS
from annotate.services.pairs.rounds import RoundRefused, create_round, preview_round, round_report
from tests.pairs.conftest import make_pair_items
from tests.pairs.factories_rounds import (
    TRAINING,
    add_items,
    add_noisy_round_one,
    add_training,
    sign_head,
    store_detector,
)

pytestmark = pytest.mark.django_db
BAND = {"low": 0.1, "high": 0.9}


def snapshot(project: Project) -> dict[str, Any]:
    """Everything a round writes, to check a refusal changed nothing."""
    return {
        "rounds": list(PairRound.objects.filter(project=project).values_list("number", "status", "closed_at")),
        "detectors": PairDetector.objects.filter(project=project).count(),
        "items": list(PairItem.objects.filter(project=project).order_by("pk")
                      .values_list("pk", "state", "round_id", "judges_needed", "selection")),
    }


# --- round 1 ---------------------------------------------------------------------------------------------------


def test_round_one_draws_at_random_from_the_pool_and_the_seed_repeats_the_draw(pairs_project: Project) -> None:
    pool = make_pair_items(pairs_project, 12, round_number=None)
    first = preview_round(pairs_project, size=5, seed=7, **BAND)
    again = preview_round(pairs_project, size=5, seed=7, **BAND)
    other = [preview_round(pairs_project, size=5, seed=seed, **BAND).selected for seed in range(8, 14)]
    assert first.refusal is None and first.number == 1 and first.ratio is None
    assert first.selected == again.selected
    assert any(selected != first.selected for selected in other)  # 792 possible draws: six seeds do not all agree
    ids = [item_id for item_id, _ in first.selected]
    assert len(ids) == len(set(ids)) == 5 and set(ids) <= {item.pk for item in pool}
    assert all(selection == {"method": "random", "p_h": None, "predicted": None, "filters_passed": [],
                             "sampling_probability": round(5 / 12, 6)} for _, selection in first.selected)
    assert [(row["step"], row["count"]) for row in first.funnel] == [("pool", 12), ("selected", 5)]
    assert PairRound.objects.filter(project=pairs_project).count() == 0  # a preview writes nothing


def test_round_one_is_created_open_with_its_items_and_previewed_draw(pairs_project: Project, admin_user: Any) -> None:
    make_pair_items(pairs_project, 9, round_number=None)
    PairConfig.objects.filter(project=pairs_project).update(judges_per_item=5)
    planned = preview_round(pairs_project, size=4, seed=3, **BAND)
    pair_round = create_round(pairs_project, admin_user, size=4, seed=3, **BAND)
    assert (pair_round.number, pair_round.status, pair_round.size, pair_round.seed) == (1, "open", 4, 3)
    assert pair_round.detector is None and pair_round.promised_h_share is None and pair_round.created_by == admin_user
    drawn = PairItem.objects.filter(round=pair_round).order_by("pk")
    assert [item.pk for item in drawn] == [item_id for item_id, _ in planned.selected]
    assert {(item.state, item.judges_needed, item.selection["method"]) for item in drawn} == {("open", 5, "random")}
    assert PairItem.objects.filter(project=pairs_project, state="pool").count() == 5


def test_round_one_takes_the_whole_pool_when_it_is_smaller_than_the_size(pairs_project: Project) -> None:
    make_pair_items(pairs_project, 3, round_number=None)
    plan = preview_round(pairs_project, size=10, seed=1, **BAND)
    assert len(plan.selected) == 3 and "fewer items than the size" in plan.funnel[-1]["explanation"]


def test_an_empty_pool_is_refused_and_nothing_changes(pairs_project: Project, admin_user: Any) -> None:
    before = snapshot(pairs_project)
    plan = preview_round(pairs_project, size=5, seed=1, **BAND)
    assert plan.refusal is not None and "pool is empty" in plan.refusal
    with pytest.raises(RoundRefused, match="pool is empty"):
        create_round(pairs_project, admin_user, size=5, seed=1, **BAND)
    assert snapshot(pairs_project) == before


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"size": 0, "low": 0.1, "high": 0.9}, "size must be a whole number of 1 or more, not 0"),
        ({"size": 5, "low": 0.8, "high": 0.2}, "low (0.8) must not be above high (0.2)"),
        ({"size": 5, "low": -0.1, "high": 0.9}, "low must be a number from 0 to 1, not -0.1"),
        ({"size": 5, "low": 0.1, "high": 0.9, "drop_fraction": 1.5}, "drop_fraction must be a number from 0 to 1"),
    ],
)
def test_bad_parameters_are_refused_by_name(pairs_project: Project, params: dict[str, Any], named: str) -> None:
    make_pair_items(pairs_project, 3, round_number=None)
    plan = preview_round(pairs_project, seed=1, **params)
    assert plan.refusal is not None and named in plan.refusal and plan.selected == []


# --- later rounds: the funnel by hand ------------------------------------------------------------------------


def round_three_project(project: Project) -> dict[str, Any]:
    """Round 1 (closed) and round 2 (open, selected by a hand-built detector 1), 40 consensus items, 32 in the pool.

    Detector 1 predicts H exactly when t >= 0. On round 2's consensus items
    (t = -1: 2 H 6 N; t = 1: 6 H 2 N; t = 2: 8 H) that gives TP = 6 + 8 = 14,
    FP = 2, TN = 6, FN = 2, so R = (TN - FN)/(TP - FP) = 4/12 = 1/3.
    """
    PairConfig.objects.filter(project=project).update(min_counts=10)
    first = PairRound.objects.create(project=project, number=1, size=24, seed=1, status="closed")
    detector = store_detector(project, 1, sign_head())
    second = PairRound.objects.create(project=project, number=2, size=24, seed=2, detector=detector,
                                      promised_h_share=0.5)
    add_training(project, {-2: TRAINING[-2], 0: TRAINING[0]}, pair_round=first)
    add_training(project, {-1: TRAINING[-1], 1: TRAINING[1], 2: TRAINING[2]}, pair_round=second)
    below = add_items(project, [-2] * 5)
    above = add_items(project, [2] * 5)
    # t = -1 (P(H) about 0.25, predicted N): one paraphrase, two without an original, one name swap.
    minus = add_items(project, [-1] * 10, paraphrase=[0.95, None, None] + [0.5] * 7,
                      swaps=["", "", "", "name"] + [""] * 6)
    # t = 1 (P(H) about 0.75, predicted H): two paraphrases (one also a date swap), one without an original,
    # two date swaps and a name swap among the rest.
    plus = add_items(project, [1] * 12, paraphrase=[0.95, 0.95, None] + [0.5] * 9,
                     swaps=["", "date", "", "date", "date", "name"] + [""] * 6)
    return {"first": first, "second": second, "below": below, "above": above, "minus": minus, "plus": plus}


def test_a_later_round_goes_through_the_funnel_with_the_counts_worked_out_by_hand(pairs_project: Project) -> None:
    built = round_three_project(pairs_project)
    plan = preview_round(pairs_project, size=6, seed=11, **BAND)
    assert plan.refusal is None and plan.number == 3
    assert [(row["step"], row["count"]) for row in plan.funnel] == [
        ("pool", 32),
        ("band", 22),  # the 5 at t = -2 and the 5 at t = 2 are trivial
        ("paraphrase", 19),  # 1 + 2 above 0.9; the 3 without an original pass
        ("date_name", 15),  # 2 date and 2 name swaps left, all dropped (drop_fraction 1)
        ("subsampling", 10),  # keep round(7 / 3) = 2 of 7 predicted H, all 8 predicted N
        ("selected", 6),  # 6 * 2/10 -> 1 predicted H, 5 predicted N
    ]
    explanations = {row["step"]: row["explanation"] for row in plan.funnel}
    assert "5 items below 0.1" in explanations["band"] and "5 above 0.9" in explanations["band"]
    assert "3 dropped as paraphrases" in explanations["paraphrase"]
    assert "3 have no original" in explanations["paraphrase"]
    assert "2 date swaps and 2 name swaps" in explanations["date_name"] and "4 of them dropped" in explanations[
        "date_name"]
    assert "Kept 2 of 7 predicted H" in explanations["subsampling"]
    assert "8 of 8 predicted N" in explanations["subsampling"]

    ratio = plan.ratio
    assert ratio is not None and (ratio.tp, ratio.fp, ratio.tn, ratio.fn) == (14, 2, 6, 2)
    assert ratio.r == pytest.approx(1 / 3) and ratio.action == "keep_share_of_h"
    assert ratio.keep_predicted_h == pytest.approx(1 / 3) and ratio.keep_predicted_n == 1.0
    assert plan.promised_h_share == pytest.approx(0.5)
    assert "Detector 1's predictions" in (plan.ratio_source or "") and "24 consensus items of round 2" in (
        plan.ratio_source or "")
    assert plan.detector == {"number": 2, "encoder": plan.detector["encoder"], "trained_on": 40, "trained_h": 20,
                             "train_seconds": plan.detector["train_seconds"]}

    # Why each item was chosen.
    selected = dict(plan.selected)
    excluded = {item.pk for item in built["below"] + built["above"]}
    excluded |= {item.pk for item in built["minus"] + built["plus"]
                 if (item.paraphrase_similarity or 0) > 0.9 or item.swap_kind}
    assert not set(selected) & excluded
    plus_ids = {item.pk for item in built["plus"]}
    predicted = [selection["predicted"] for selection in selected.values()]
    assert predicted.count("H") == 1 and predicted.count("N") == 5
    for item_id, selection in selected.items():
        assert selection["method"] == "detector"
        assert selection["filters_passed"] == ["band", "paraphrase", "date_name", "subsampling"]
        assert selection["predicted"] == ("H" if item_id in plus_ids else "N")
        assert 0.1 <= selection["p_h"] <= 0.9
        assert selection["p_h"] == pytest.approx(0.75 if item_id in plus_ids else 0.25, abs=0.02)
        # The chance an item of its predicted class that passed the filters was drawn: 1 of 7 H, 5 of 8 N.
        assert selection["sampling_probability"] == round(1 / 7 if item_id in plus_ids else 5 / 8, 6)


def test_drop_fraction_drops_that_share_of_the_swaps_and_zero_keeps_them(pairs_project: Project) -> None:
    round_three_project(pairs_project)
    half = preview_round(pairs_project, size=6, seed=11, drop_fraction=0.5, **BAND)
    none = preview_round(pairs_project, size=6, seed=11, drop_fraction=0.0, paraphrase_max=1.0, **BAND)
    assert half.funnel[3]["count"] == 17  # 2 of the 4 swaps dropped
    assert none.funnel[2]["count"] == 22 and none.funnel[3]["count"] == 22  # nothing dropped at either step


def test_the_subsampling_ratio_sets_how_much_of_each_predicted_class_is_kept(pairs_project: Project) -> None:
    built = round_three_project(pairs_project)
    # Four more round-2 items that detector 1 got right as N (t = -3): TN = 10, so R = (10 - 2)/(14 - 2) = 2/3.
    add_training(pairs_project, {-3: (0, 4)}, pair_round=built["second"])
    plan = preview_round(pairs_project, size=100, seed=4, **BAND)
    ratio = plan.ratio
    assert ratio is not None and (ratio.tp, ratio.fp, ratio.tn, ratio.fn) == (14, 2, 10, 2)
    assert ratio.r == pytest.approx(2 / 3)
    # 7 predicted H after the filters: keep round(7 * 2/3) = 5; all 8 predicted N; size 100 takes them all.
    assert plan.funnel[4]["count"] == 13 and len(plan.selected) == 13
    assert sum(1 for _, selection in plan.selected if selection["predicted"] == "H") == 5


def test_round_two_takes_its_counts_from_cross_validation_when_round_one_was_random(pairs_project: Project) -> None:
    PairConfig.objects.filter(project=pairs_project).update(min_counts=10)
    first = PairRound.objects.create(project=pairs_project, number=1, size=40, seed=1)
    add_training(pairs_project, TRAINING, pair_round=first)
    # Imported labels train the detector, but R counts round 1's consensus items only (DESIGN.md, step 6).
    add_training(pairs_project, {-2: (0, 3), 2: (3, 0)}, state=PairItem.State.LABELLED)
    add_items(pairs_project, [-1] * 6 + [1] * 6)
    plan = preview_round(pairs_project, size=4, seed=5, **BAND)
    ratio, cross_validation = plan.ratio, plan.cross_validation
    assert plan.refusal is None and ratio is not None and cross_validation is not None
    assert (cross_validation["items"], cross_validation["trained_on"], cross_validation["seed"]) == (40, 46, 5)
    splits = cross_validation["per_split"]
    assert cross_validation["repeats"] == len(splits) == CV_REPEATS
    # Each split scores every counted item once, held out: the 40 of round 1, 20 of them H.
    assert all(sum(split) == 40 and split[0] + split[3] == 20 for split in splits)
    assert [ratio.tp, ratio.fp, ratio.tn, ratio.fn] == [sum(column) for column in zip(*splits, strict=True)]
    again = subsampling_ratio(ratio.tp, ratio.fp, ratio.tn, ratio.fn, min_counts=10)
    assert (ratio.r, ratio.action) == (again.r, again.action)
    assert cross_validation["r_per_split"] == [subsampling_ratio(*split, min_counts=10).r for split in splits]
    assert "cross-validated" in (plan.ratio_source or "") and "round 1 was drawn at random" in (
        plan.ratio_source or "")
    assert "6 of them imported labels or earlier rounds' items, used for training only" in (plan.ratio_source or "")
    assert plan.ratio_dict()["cross_validation"] == cross_validation


def test_round_two_r_from_repeated_splits_moves_less_with_the_seed_than_one_split(pairs_project: Project) -> None:
    add_noisy_round_one(pairs_project, separation=1.0, data_seed=5)
    summed, single = [], []
    for seed in range(6):
        plan = preview_round(pairs_project, size=4, low=0.0, high=1.0, seed=seed)
        assert plan.ratio is not None and plan.cross_validation is not None
        summed.append(plan.ratio.r)
        single.append(plan.cross_validation["r_per_split"][0])  # what one split alone gives, as before
    assert None not in summed and None not in single
    # Each seed splits the items otherwise, so one split's R moves with it; the sum of the splits moves less.
    assert len(set(single)) > 1
    assert float(np.std(summed)) < 0.75 * float(np.std(single))


def test_too_few_labelled_items_are_refused_with_the_numbers_and_nothing_changes(
    pairs_project: Project, admin_user: Any
) -> None:
    first = PairRound.objects.create(project=pairs_project, number=1, size=5, seed=1)
    add_training(pairs_project, {-1: (3, 2)}, pair_round=first)
    add_items(pairs_project, [1] * 4)
    before = snapshot(pairs_project)
    plan = preview_round(pairs_project, size=4, seed=1, **BAND)
    assert plan.refusal is not None
    assert "5 consensus or imported-label items (3 H, 2 N)" in plan.refusal and "at least 20" in plan.refusal
    with pytest.raises(RoundRefused, match=r"5 consensus or imported-label items \(3 H, 2 N\).*at least 20"):
        create_round(pairs_project, admin_user, size=4, seed=1, **BAND)
    assert snapshot(pairs_project) == before


def test_one_class_only_is_refused_with_the_numbers(pairs_project: Project) -> None:
    first = PairRound.objects.create(project=pairs_project, number=1, size=25, seed=1)
    add_training(pairs_project, {1: (25, 0)}, pair_round=first)
    add_items(pairs_project, [1] * 4)
    plan = preview_round(pairs_project, size=4, seed=1, **BAND)
    assert plan.refusal is not None and "one class only" in plan.refusal and "25 H and 0 N" in plan.refusal


def test_pool_items_without_a_vector_from_the_encoder_are_refused(pairs_project: Project) -> None:
    PairConfig.objects.filter(project=pairs_project).update(min_counts=10)
    first = PairRound.objects.create(project=pairs_project, number=1, size=40, seed=1)
    add_training(pairs_project, TRAINING, pair_round=first)
    add_items(pairs_project, [1] * 3)
    add_items(pairs_project, [1] * 2, encoder="some/other-encoder")
    plan = preview_round(pairs_project, size=4, seed=1, **BAND)
    assert plan.refusal is not None and "2 of the 5 pool items and 0 of the 40 labelled items" in plan.refusal


# --- creating a later round ---------------------------------------------------------------------------------


def test_create_round_writes_the_round_its_detector_and_items_and_closes_the_open_round(
    pairs_project: Project, admin_user: Any
) -> None:
    built = round_three_project(pairs_project)
    planned = preview_round(pairs_project, size=6, seed=11, **BAND)
    pair_round = create_round(pairs_project, admin_user, size=6, seed=11, **BAND)
    assert (pair_round.number, pair_round.status, pair_round.seed, pair_round.size) == (3, "open", 11, 6)
    assert pair_round.filters == {"low": 0.1, "high": 0.9, "paraphrase_max": 0.9, "drop_fraction": 1.0}
    assert pair_round.funnel == planned.funnel
    assert pair_round.ratio["R"] == pytest.approx(1 / 3) and pair_round.ratio["action"] == "keep_share_of_h"
    assert (pair_round.ratio["tp"], pair_round.ratio["fp"], pair_round.ratio["tn"], pair_round.ratio["fn"]) == (
        14, 2, 6, 2)
    assert pair_round.ratio["seed"] == 11 and "Detector 1" in pair_round.ratio["counts_from"]
    assert pair_round.promised_h_share == pytest.approx(0.5)
    detector = pair_round.detector
    assert detector is not None and (detector.number, detector.trained_on, detector.trained_h) == (2, 40, 20)
    built["second"].refresh_from_db()
    assert built["second"].status == "closed" and built["second"].closed_at is not None
    drawn = PairItem.objects.filter(round=pair_round).order_by("pk")
    assert [(item.pk, item.selection) for item in drawn] == planned.selected
    assert {(item.state, item.judges_needed, item.taken) for item in drawn} == {("open", 4, 0)}
    assert PairItem.objects.filter(project=pairs_project, state="pool").count() == 32 - 6


def test_create_round_is_atomic_when_writing_the_items_fails(pairs_project: Project, admin_user: Any) -> None:
    round_three_project(pairs_project)
    before = snapshot(pairs_project)
    plan = preview_round(pairs_project, size=6, seed=11, **BAND)
    plan.selected[-1][1]["not_json"] = object()  # fails only when the last item is written
    with pytest.raises(TypeError):
        rounds.create_round_from_plan(pairs_project, admin_user, plan, 6)
    assert snapshot(pairs_project) == before  # round 2 still open, no round 3, no detector 2, items in the pool


def test_create_round_from_a_stale_plan_is_refused(pairs_project: Project, admin_user: Any) -> None:
    round_three_project(pairs_project)
    plan = preview_round(pairs_project, size=6, seed=11, **BAND)
    PairItem.objects.filter(pk=plan.selected[0][0]).update(state="open")
    before = snapshot(pairs_project)
    with pytest.raises(RoundRefused, match="1 of the 6 selected items left the pool"):
        rounds.create_round_from_plan(pairs_project, admin_user, plan, 6)
    assert snapshot(pairs_project) == before


# --- report --------------------------------------------------------------------------------------------------


def test_round_report_gives_the_selecting_detectors_metrics_on_the_rounds_consensus_items(
    pairs_project: Project,
) -> None:
    built = round_three_project(pairs_project)
    report = round_report(built["second"])
    # Round 2's consensus items and detector 1's P(H) = logistic(4 t) on them, checked with scikit-learn.
    positions = [-1] * 8 + [1] * 8 + [2] * 8
    labels = [1] * 2 + [0] * 6 + [1] * 6 + [0] * 2 + [1] * 8
    p_h = [1 / (1 + math.exp(-4 * t)) for t in positions]
    predicted = [1 if p >= 0.5 else 0 for p in p_h]
    metrics = report["metrics"]
    assert metrics["n"] == 24
    assert metrics["accuracy"] == pytest.approx(accuracy_score(labels, predicted))
    assert metrics["precision_h"] == pytest.approx(precision_score(labels, predicted))
    assert metrics["recall_n"] == pytest.approx(recall_score(labels, predicted, pos_label=0))
    assert metrics["f1_h"] == pytest.approx(f1_score(labels, predicted))
    assert metrics["f1_n"] == pytest.approx(f1_score(labels, predicted, pos_label=0))
    assert metrics["g_mean"] == pytest.approx(
        math.sqrt(recall_score(labels, predicted) * recall_score(labels, predicted, pos_label=0)))
    assert metrics["auc"] == pytest.approx(roc_auc_score(labels, p_h), abs=1e-6)
    assert metrics["brier"] == pytest.approx(brier_score_loss(labels, p_h), abs=1e-3)  # vectors kept as float16
    assert report["detector"]["number"] == 1
    assert report["balance"] == {"h": 16, "n": 8, "h_share": pytest.approx(16 / 24), "promised_h_share": 0.5}
    assert report["states"]["consensus"] == 24


def test_round_report_of_round_one_says_no_detector_selected_it(pairs_project: Project) -> None:
    built = round_three_project(pairs_project)
    report = round_report(built["first"])
    assert report["metrics"] is None and "round 1 is drawn at random" in report["metrics_reason"]
    assert report["balance"]["h"] == 4 and report["balance"]["n"] == 12


def test_round_report_on_a_round_created_by_the_service_counts_its_consensus_items(
    pairs_project: Project, admin_user: Any
) -> None:
    round_three_project(pairs_project)
    pair_round = create_round(pairs_project, admin_user, size=6, seed=11, **BAND)
    empty = round_report(pair_round)
    assert empty["metrics"] is None and empty["metrics_reason"] == "No consensus item of this round yet."
    items = list(PairItem.objects.filter(round=pair_round).order_by("pk"))
    for item, label in zip(items[:4], ["H", "N", "N", "H"], strict=True):
        PairItem.objects.filter(pk=item.pk).update(state="consensus", label=label)
    report = round_report(pair_round)
    assert report["metrics"]["n"] == 4 and report["balance"]["h"] == 2 and report["balance"]["h_share"] == 0.5
    assert report["drawn"] == 6 and report["states"]["open"] == 2


# --- the job --------------------------------------------------------------------------------------------------


def test_the_round_job_creates_the_round_once_and_a_refusal_fails_it_with_the_message(
    pairs_project: Project, admin_user: Any
) -> None:
    make_pair_items(pairs_project, 6, round_number=None)
    job = rounds.start_round_job(pairs_project, admin_user, size=3, seed=2)
    assert job.kind == Job.Kind.PAIR_ROUND and job.options["size"] == 3 and job.options["seed"] == 2
    done = rounds.run_round_job(job.pk)
    assert done.status == Job.Status.DONE and done.options["round"] == 1 and done.done == done.total
    assert rounds.run_round_job(job.pk).status == Job.Status.DONE
    assert PairRound.objects.filter(project=pairs_project).count() == 1  # run again: no second round

    refused = rounds.start_round_job(pairs_project, admin_user, size=3)
    assert isinstance(refused.options["seed"], int)
    failed = rounds.run_round_job(refused.pk)
    assert failed.status == Job.Status.FAILED and "Too few labelled items" in failed.error
    assert PairRound.objects.filter(project=pairs_project).count() == 1


def test_start_round_job_rejects_unknown_parameters(pairs_project: Project) -> None:
    with pytest.raises(ValueError, match="unknown round parameters"):
        rounds.start_round_job(pairs_project, None, sizes=3)


def test_head_predictions_match_the_hand_built_detector() -> None:
    p = sign_head().p_h(np.asarray([[-1, 1], [0, 1], [1, 1]], dtype=np.float32))
    assert p == pytest.approx([1 / (1 + math.exp(4)), 0.5, 1 / (1 + math.exp(-4))])
