"""A judge's latest judgements as a detector of the FaithBench detector evaluation: the same balanced accuracy
as scikit-learn on the verdicts worked out by hand, score 4 consistent and 3 not, failures invalid, on the
results page and in ``detector_eval``, and the kept figures refreshed when judgements change. A sample the judge
never judged is missing (left out of n), not invalid.

The scene (tests/annotate/results_scene.py): worst labels s0 U, s1 Q, s2 U, t0 U, t1 B, t2 Q, t3 C, so the
truth is hallucinated for s0 s1 s2 t0 t2 and consistent for t1 t3.
"""

from __future__ import annotations

import io
import json
from html import unescape
from typing import Any

import pytest
from django.core.management import call_command
from sklearn.metrics import balanced_accuracy_score, f1_score

from annotate.services import results_cache, stats
from judging.models import Judge, Judgement, JudgeRun
from judging.services.detectors import SCORE_RULE, judge_predictions
from tests.annotate import results_scene
from tests.annotate.results_scene import tags
from tests.conftest import login

# The results scene's fixtures (tests/annotate/conftest.py registers them for tests/annotate only).
scene = results_scene.scene
empty_cache = results_scene.empty_cache
quick_passwords = results_scene.quick_passwords

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords")]

CONSISTENT = {"s0": 0, "s1": 0, "s2": 0, "t0": 0, "t1": 1, "t2": 0, "t3": 1}  # 1 = consistent (the truth)


def samples(scene: dict[str, Any]) -> dict[str, Any]:
    return {**{f"s{i}": sample for i, sample in enumerate(scene["s"])},
            **{f"t{i}": sample for i, sample in enumerate(scene["t"])}}


def rubric_run(scene: dict[str, Any], judge: Judge, outcomes: dict[str, int | str]) -> JudgeRun:
    """A finished run: an int is a score, "parse_error"/"error" a failed judgement."""
    run = JudgeRun.objects.create(project=scene["project"], judge=judge, status=JudgeRun.Status.DONE)
    by_name = samples(scene)
    for name, outcome in outcomes.items():
        if isinstance(outcome, int):
            Judgement.objects.create(run=run, sample=by_name[name], status="ok", score=outcome)
        else:
            Judgement.objects.create(run=run, sample=by_name[name], status=outcome, raw="no score here")
    return run


def rubric_judge(scene: dict[str, Any], name: str = "llm") -> Judge:
    return Judge.objects.create(project=scene["project"], name=name, kind=Judge.Kind.RUBRIC,
                                base_url="http://127.0.0.1:9/v1", model="m")


def expected(verdicts: dict[str, int]) -> dict[str, float]:
    truth = [CONSISTENT[name] for name in verdicts]
    predicted = list(verdicts.values())
    return {"balanced_accuracy": round(100 * balanced_accuracy_score(truth, predicted), 2),
            "f1_macro": round(100 * f1_score(truth, predicted, average="macro", zero_division=0), 2)}


def test_a_rubric_judge_scores_like_sklearn_on_its_verdicts_with_failures_invalid_and_unjudged_missing(
    scene: dict[str, Any],
) -> None:
    judge = rubric_judge(scene)
    # An older run said s1 is a 5; the latest run's judgement (2) is the one that counts.
    rubric_run(scene, judge, {"s1": 5})
    rubric_run(scene, judge, {"s0": 4, "s1": 2, "s2": 3, "t0": 5, "t1": 4, "t2": "parse_error"})
    # Verdicts by hand: 4 and 5 consistent (1), 2 and 3 not (0); t2 failed (invalid); t3 was never judged (missing).
    verdicts = {"s0": 1, "s1": 0, "s2": 0, "t0": 1, "t1": 1}
    report = stats.project_detector_eval(scene["project"], 0.5, 1)
    assert set(report) == {"hhem", "gpt", "judge:llm"}
    assert report["judge:llm"] == {"n": 5, "missing": 1, "invalid": 2, "rule": SCORE_RULE} | expected(verdicts)
    # Recall of "consistent" 1/1 (t1), of "hallucinated" 2/4 (s1, s2 of s0 s1 s2 t0): (1 + 0.5) / 2.
    assert report["judge:llm"]["balanced_accuracy"] == 75.0


def test_score_four_is_consistent_and_three_is_not(scene: dict[str, Any]) -> None:
    judge = rubric_judge(scene)
    run = rubric_run(scene, judge, {"t1": 4, "t3": 3, "s0": 3, "s1": 4})
    assert judge_predictions(scene["project"])["judge:llm"] == {
        samples(scene)[name].pk: verdict for name, verdict in (("t1", 1), ("t3", 0), ("s0", 0), ("s1", 1))
    }
    report = stats.project_detector_eval(scene["project"], 0.5, 1)["judge:llm"]
    assert report == {"n": 4, "missing": 3, "invalid": 3, "rule": SCORE_RULE} | expected(
        {"t1": 1, "t3": 0, "s0": 0, "s1": 1})
    assert run.judgements.count() == 4


def test_an_error_judgement_is_invalid_not_a_verdict(scene: dict[str, Any]) -> None:
    judge = rubric_judge(scene)
    rubric_run(scene, judge, {"s0": "error", "t1": 5, "t3": 1})
    predictions = judge_predictions(scene["project"])["judge:llm"]
    assert predictions[samples(scene)["s0"].pk] == "error"  # its status, never a number
    report = stats.project_detector_eval(scene["project"], 0.5, 1)["judge:llm"]
    # 7 samples with a truth: 2 verdicts, 1 error (invalid), 4 never judged (missing).
    assert (report["n"], report["missing"], report["invalid"]) == (2, 4, 5)


def test_rubric_verdicts_ignore_the_threshold_even_when_a_judge_says_only_consistent(scene: dict[str, Any]) -> None:
    # At threshold 0, a 0 read as a probability would count as consistent (0 >= 0); as a verdict it is not.
    mixed = rubric_judge(scene, "mixed")
    rubric_run(scene, mixed, {"s0": 2, "s1": 1, "t1": 5, "t3": 4})
    lenient = rubric_judge(scene, "lenient")  # every score >= 4: only 1s, still verdicts
    rubric_run(scene, lenient, {"s0": 4, "s1": 5, "t1": 5, "t3": 4})
    for threshold in (0.0, 0.5, 1.0):
        report = stats.project_detector_eval(scene["project"], threshold, 1)
        assert report["judge:mixed"] == {"n": 4, "missing": 3, "invalid": 3, "rule": SCORE_RULE} | expected(
            {"s0": 0, "s1": 0, "t1": 1, "t3": 1})
        assert report["judge:mixed"]["balanced_accuracy"] == 100.0
        assert report["judge:lenient"] == {"n": 4, "missing": 3, "invalid": 3, "rule": SCORE_RULE} | expected(
            {"s0": 1, "s1": 1, "t1": 1, "t3": 1})
        assert report["judge:lenient"]["balanced_accuracy"] == 50.0


def test_an_nli_judge_is_a_probability_against_the_threshold(scene: dict[str, Any]) -> None:
    judge = Judge.objects.create(project=scene["project"], name="hhem-windows", kind=Judge.Kind.NLI,
                                 nli_model_path="/srv/models/hhem")
    run = JudgeRun.objects.create(project=scene["project"], judge=judge, status=JudgeRun.Status.DONE)
    p = {"s0": 0.2, "s1": 0.6, "s2": 0.1, "t0": 0.7, "t1": 0.8, "t2": 0.3, "t3": 0.55}
    by_name = samples(scene)
    for name, value in p.items():
        Judgement.objects.create(run=run, sample=by_name[name], status="ok", probability=value)
    for threshold in (0.5, 0.65):
        verdicts = {name: int(value >= threshold) for name, value in p.items()}
        report = stats.project_detector_eval(scene["project"], threshold, 1)["judge:hhem-windows"]
        assert report == {"n": 7, "missing": 0, "invalid": 0, "rule": f"p >= {threshold:g}"} | expected(verdicts)


def test_detector_eval_command_and_results_page_show_the_judge(scene: dict[str, Any]) -> None:
    judge = rubric_judge(scene)
    rubric_run(scene, judge, {"s0": 2, "s1": 4, "t1": 5, "t3": 1})
    out = io.StringIO()
    call_command("detector_eval", "--project", "demo", "--json", stdout=out)
    command = json.loads(out.getvalue())
    assert command["judge:llm"] == {"n": 4, "missing": 3, "invalid": 3, "rule": SCORE_RULE} | expected(
        {"s0": 0, "s1": 1, "t1": 1, "t3": 0})
    page = tags(login(scene["admin"]).get("/projects/demo/results/"))
    row = page.one("tr", data_detector="judge:llm")
    assert row is not None
    html = login(scene["admin"]).get("/projects/demo/results/").content.decode()
    assert f"{command['judge:llm']['balanced_accuracy']:.2f}" in html


def test_the_kept_figures_refresh_after_new_judgements(scene: dict[str, Any], settings: Any) -> None:
    settings.FIGURES_SYNC_MS = 10**9  # recompute in the request whenever the data version moved
    client = login(scene["admin"])
    before = tags(client.get("/projects/demo/results/"))
    assert not before.find("tr", data_detector="judge:llm")
    version = results_cache.data_version(scene["project"])

    judge = rubric_judge(scene)
    rubric_run(scene, judge, {"s0": 2, "t1": 5})
    assert results_cache.data_version(scene["project"]) != version
    after = tags(client.get("/projects/demo/results/"))
    after.one("tr", data_detector="judge:llm")

    version = results_cache.data_version(scene["project"])
    rubric_run(scene, judge, {"s1": 4, "t3": 4})  # a later run adds two more samples
    assert results_cache.data_version(scene["project"]) != version
    html = client.get("/projects/demo/results/").content.decode()
    row = html.split('data-detector="judge:llm"', 1)[1].split("</tr>", 1)[0]
    assert 'data-metric="n">4<' in row and 'data-metric="missing">3<' in row and 'data-metric="invalid">3<' in row


def metric_cells(page: str, detector: str) -> dict[str, str]:
    """The results page's detector row as {data-metric: cell text}."""
    row = page.split(f'data-detector="{detector}"', 1)[1].split("</tr>", 1)[0]
    cells = {}
    for cell in row.split('data-metric="')[1:]:
        name, rest = cell.split('"', 1)
        cells[name] = unescape(rest.split(">", 1)[1].split("<", 1)[0])
    return cells


def test_a_judge_run_on_flagged_samples_only_leaves_the_others_missing_not_invalid(scene: dict[str, Any]) -> None:
    reasoner = rubric_judge(scene, "reasoner")
    # It judged four of the seven annotated samples: two answers, a parse error and an endpoint error.
    rubric_run(scene, reasoner, {"s0": 2, "t1": 5, "s1": "parse_error", "t2": "error"})
    report = stats.project_detector_eval(scene["project"], 0.5, 1)["judge:reasoner"]
    # n: the two usable answers; invalid: the two answers without a score; missing: s2, t0, t3, never judged.
    assert report == {"n": 2, "missing": 3, "invalid": 5, "rule": SCORE_RULE} | expected({"s0": 0, "t1": 1})
    assert report["n"] + report["invalid"] == len(CONSISTENT)  # invalid: every prediction left out

    page = login(scene["admin"]).get("/projects/demo/results/?threshold=0.75").content.decode()
    shown = metric_cells(page, "judge:reasoner")
    assert (shown["n"], shown["missing"], shown["invalid"]) == ("2", "3", "5")
    # Each row shows the rule that applies to it: the threshold only to probabilities.
    assert shown["rule"] == "score >= 4 (1-5 score)"
    assert metric_cells(page, "hhem")["rule"] == "p >= 0.75"
    assert metric_cells(page, "gpt")["rule"] == "1 = consistent (0/1 verdict)"


def test_a_judge_whose_answers_all_failed_is_still_evaluated(scene: dict[str, Any]) -> None:
    broken = rubric_judge(scene, "broken")
    rubric_run(scene, broken, {"s0": "parse_error", "t3": "error"})
    report = stats.project_detector_eval(scene["project"], 0.5, 1)["judge:broken"]
    assert report == {"n": 0, "missing": 5, "invalid": 7, "balanced_accuracy": None, "f1_macro": None,
                      "rule": SCORE_RULE}
