"""Hallucination rates, detector evaluation and challenging samples (pure module, no database)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score, f1_score

from annotate.results import (
    challenging_groups,
    challenging_mask,
    challenging_samples,
    classify_detector_outputs,
    detector_keys,
    evaluate_detector_outputs,
    evaluate_detectors,
    hallucination_rates,
    rank_generators,
    verdict_detectors,
)


def test_hallucination_rates_by_hand() -> None:
    samples = [("x", "U"), ("x", "Q"), ("x", "B"), ("x", "C"), ("y", "C"), ("y", "C"), ("y", "U")]
    rates = hallucination_rates(samples)
    assert rates == {
        "x": {"n": 4, "U": 25.0, "U+Q": 50.0, "U+Q+B": 75.0},
        "y": {"n": 3, "U": 33.33, "U+Q": 33.33, "U+Q+B": 33.33},
    }


def test_hallucination_rates_of_nothing_is_empty() -> None:
    assert hallucination_rates([]) == {}


def test_rank_generators_lowest_rate_first_and_ties_share_a_rank() -> None:
    rates = hallucination_rates(
        [("x", "U"), ("x", "Q"), ("x", "B"), ("x", "C")]
        + [("y", "C"), ("y", "C"), ("y", "U")]
        + [("z", "C"), ("z", "C"), ("z", "U")]
    )
    ranks = rank_generators(rates)
    assert ranks["U"] == {"x": 1, "y": 2, "z": 2}
    assert ranks["U+Q"] == {"y": 1, "z": 1, "x": 3}
    assert ranks["U+Q+B"] == {"y": 1, "z": 1, "x": 3}


TRUTHS = {"s1": "U", "s2": "Q", "s3": "C", "s4": "B"}


def test_probability_detector_by_hand() -> None:
    # s1 0.2 -> hallucinated (right), s2 0.7 -> consistent (wrong), s3/s4 consistent (right; 0.5 >= 0.5).
    # Recall: hallucinated 1/2, consistent 2/2 -> 75. F1: hallucinated 2/3, consistent 4/5 -> 73.33.
    report = evaluate_detectors({"hhem": {"s1": 0.2, "s2": 0.7, "s3": 0.9, "s4": 0.5}}, TRUTHS)
    assert report == {"hhem": {"n": 4, "missing": 0, "invalid": 0, "balanced_accuracy": 75.0, "f1_macro": 73.33,
                               "rule": "p >= 0.5"}}


def test_threshold_moves_the_decision() -> None:
    report = evaluate_detectors({"hhem": {"s1": 0.2, "s2": 0.7, "s3": 0.9, "s4": 0.5}}, TRUTHS, threshold=0.8)
    # now s2 and s4 read as hallucinated: hallucinated recall 1, consistent recall 1/2
    assert report["hhem"]["balanced_accuracy"] == 75.0
    with pytest.raises(ValueError, match="threshold must be a number between 0 and 1"):
        evaluate_detectors({}, TRUTHS, threshold=1.5)


def test_verdict_detector_ignores_threshold_and_bools_are_invalid() -> None:
    predictions = {"gpt": {"s1": 0, "s2": 1, "s3": 1, "s4": True}}
    assert verdict_detectors(predictions) == {"gpt"}
    for threshold in (0.0, 0.5, 1.0):
        report = evaluate_detectors(predictions, TRUTHS, threshold=threshold)
        # s4 (a bool) is invalid; recall hallucinated 1/2, consistent 1/1; F1 2/3 and 2/3
        assert report["gpt"] == {"n": 3, "missing": 0, "invalid": 1, "balanced_accuracy": 75.0, "f1_macro": 66.67,
                                 "rule": "1 = consistent (0/1 verdict)"}


@pytest.mark.parametrize("bad", ["0.3", 1.5, -0.1, True, [0.5], math.inf, "parse_error"])
def test_invalid_predictions_are_excluded_and_counted(bad: object) -> None:
    predictions = {"d": {"s1": 0.2, "s2": 0.1, "s3": 0.9, "s4": bad}}
    report = evaluate_detectors(predictions, TRUTHS)
    assert (report["d"]["n"], report["d"]["missing"], report["d"]["invalid"]) == (3, 0, 1)
    assert report["d"]["balanced_accuracy"] == 100.0


@pytest.mark.parametrize("nothing", [None, math.nan])
def test_a_null_prediction_is_missing_not_invalid(nothing: object) -> None:
    predictions = {"d": {"s1": 0.2, "s2": 0.1, "s3": 0.9, "s4": nothing}}
    report = evaluate_detectors(predictions, TRUTHS)
    assert (report["d"]["n"], report["d"]["missing"], report["d"]["invalid"]) == (3, 1, 1)


def test_missing_predictions_are_excluded_and_counted_apart_from_invalid() -> None:
    report = evaluate_detectors({"d": {"s1": 0.2, "s2": "error"}}, TRUTHS)
    assert (report["d"]["n"], report["d"]["missing"], report["d"]["invalid"]) == (1, 2, 3)
    empty = evaluate_detectors({"d": {}}, TRUTHS)
    assert empty["d"] == {"n": 0, "missing": 4, "invalid": 4, "balanced_accuracy": None, "f1_macro": None,
                          "rule": "p >= 0.5"}


def test_invalid_holds_the_missing_predictions_so_n_plus_invalid_is_every_sample() -> None:
    # Two nulls (None, NaN), two unusable outputs (a string, 1.5) and two valid scores over six samples.
    truths = {"a": "U", "b": "C", "c": "Q", "d": "B", "e": "C", "f": "U"}
    outputs = {"a": None, "b": math.nan, "c": "error", "d": 1.5, "e": 0.9, "f": 0.1}
    scores = evaluate_detectors({"d": outputs}, truths)["d"]
    assert scores["n"] + scores["invalid"] == len(truths)
    assert scores["missing"] <= scores["invalid"]
    assert (scores["n"], scores["missing"], scores["invalid"] - scores["missing"]) == (2, 2, 2)


def test_hallucinated_set_is_configurable() -> None:
    predictions = {"d": {"s1": 0.0, "s2": 1.0, "s3": 1.0, "s4": 0.0}}
    assert evaluate_detectors(predictions, TRUTHS)["d"]["balanced_accuracy"] == 50.0
    strict = evaluate_detectors(predictions, TRUTHS, hallucinated=frozenset({"U", "Q", "B"}))
    # truth now: s1 h, s2 h, s3 c, s4 h; predicted h, c, c, h -> recall h 2/3, c 1
    assert strict["d"]["balanced_accuracy"] == 83.33


def test_one_class_truth_follows_sklearn() -> None:
    truths = {"a": "C", "b": "C", "c": "B"}
    predictions = {"d": {"a": 1, "b": 0, "c": 1}}
    report = evaluate_detectors(predictions, truths)
    truth, predicted = [1, 1, 1], [1, 0, 1]
    with pytest.warns(UserWarning):
        expected_balanced = balanced_accuracy_score(truth, predicted)
    assert report["d"]["balanced_accuracy"] == round(100 * expected_balanced, 2) == 66.67
    expected_f1 = f1_score(truth, predicted, average="macro", zero_division=0)
    assert report["d"]["f1_macro"] == round(100 * expected_f1, 2) == 40.0


def test_detector_keys_are_the_numeric_metadata_keys_but_the_generator() -> None:
    metadatas = [
        {"summarizer": "m", "hhem": 0.3, "gpt": 1, "note": "x", "flag": True},
        {"summarizer": "m", "hhem": None, "gpt": "error", "note": "y"},
        {"hhem": 0.9, "gpt": 0, "count": math.nan},
    ]
    assert detector_keys(metadatas) == ["gpt", "hhem"]  # by name, not in the metadata's key order


def test_numeric_ids_are_not_detectors() -> None:
    metadatas = [{"raw_sample_id": n, "hhem": 0.5, "broken": 1 if n == 0 else 7} for n in range(5)]
    assert detector_keys(metadatas) == ["hhem"]


def test_challenging_samples_are_those_the_detectors_disagree_on() -> None:
    samples = {
        "s1": {"hhem": 0.9, "gpt": 1},  # agree: consistent
        "s2": {"hhem": 0.2, "gpt": 1},  # disagree
        "s3": {"hhem": 0.6, "gpt": 0},  # disagree
        "s4": {"hhem": 0.1, "gpt": 0},  # agree: hallucinated
        "s5": {"hhem": None, "gpt": 1},  # one valid output: cannot disagree
    }
    assert challenging_samples(samples) == {"s2", "s3"}
    assert challenging_samples(samples, threshold=0.95) == {"s1", "s2"}


def test_challenging_groups_ranked_and_kept_from_k() -> None:
    groups = {
        "p1": {"s1": {"h": 0.9, "g": 1}, "s2": {"h": 0.2, "g": 1}, "s3": {"h": 0.6, "g": 0}},
        "p2": {"s4": {"h": 0.1, "g": 0}, "s5": {"h": None, "g": 1}},
        "p3": {"s6": {"h": 0.1, "g": 1}},
    }
    assert challenging_groups(groups, k=2) == [{"group": "p1", "challenging": 2, "samples": 3}]
    assert [entry["group"] for entry in challenging_groups(groups, k=0)] == ["p1", "p3", "p2"]
    assert challenging_groups(groups, k=4) == []


# --------------------------------------------------------------------------- detectors over many samples, as arrays


ODD_VALUES = [0.0, 0.25, 0.5, 0.75, 1.0, 0, 1, 1.0, 0.5, None, math.nan, True, False, "0.7", 2, -0.5, 1.5,
              math.inf, 10**400, [0.5], {"p": 1}]


def random_metadatas(seed: int, count: int = 60) -> list[dict]:
    rng = random.Random(seed)
    keys = ["summarizer", "hhem", "gpt", "flaky", "raw_id", "note", "verdict"]
    metadatas = []
    for _ in range(count):
        chosen = rng.sample(keys, rng.randint(0, len(keys)))  # key orders vary, as in real files
        metadata = {}
        for key in chosen:
            if key == "raw_id":
                metadata[key] = rng.randint(0, 10**6)
            elif key == "note":
                metadata[key] = rng.choice(["ok", None])
            elif key == "verdict":
                metadata[key] = rng.choice([0, 1, 1.0, None])
            elif key == "flaky":
                metadata[key] = rng.choice(ODD_VALUES)
            elif key == "summarizer":
                metadata[key] = "model"
            else:
                metadata[key] = rng.choice([round(rng.random(), 2), None] if key == "hhem" else [0, 1, "error"])
        metadatas.append(metadata)
    return metadatas


def test_detector_outputs_follow_the_same_rules_as_the_mapping_functions() -> None:
    for seed in range(25):
        metadatas = random_metadatas(seed)
        outputs = classify_detector_outputs(metadatas)
        rng = random.Random(seed)
        rows = np.array(sorted(rng.sample(range(len(metadatas)), rng.randint(0, len(metadatas)))), dtype=np.int64)
        chosen = [metadatas[row] for row in rows]
        keys = detector_keys(chosen)
        assert outputs.detector_keys(rows) == keys
        predictions = {key: {row: metadatas[row].get(key) for row in rows.tolist()} for key in keys}
        assert outputs.verdicts(keys, rows) == verdict_detectors(predictions)
        categories = [rng.choice("CBQU") for _ in rows]
        truths = dict(zip(rows.tolist(), categories, strict=True))
        for threshold in (0.0, 0.75, 1.0):
            assert evaluate_detector_outputs(outputs, rows, categories, threshold) == evaluate_detectors(
                predictions, truths, threshold
            ), (seed, threshold)
            mask = challenging_mask(outputs, keys, rows, threshold)
            samples = {row: {key: metadatas[row].get(key) for key in keys} for row in rows.tolist()}
            assert set(rows[mask].tolist()) == challenging_samples(samples, threshold), (seed, threshold)


def test_detector_outputs_of_no_samples_are_empty() -> None:
    outputs = classify_detector_outputs([])
    none = np.zeros(0, dtype=np.int64)
    assert outputs.detector_keys(none) == []
    assert evaluate_detector_outputs(outputs, none, []) == {}
    with pytest.raises(ValueError, match="threshold must be a number between 0 and 1"):
        evaluate_detector_outputs(outputs, none, [], threshold=2)
