"""The project's judges as detectors of the FaithBench detector evaluation (results page, ``detector_eval``).

A judge's prediction for a sample is its latest judgement of it (from the most
recent run that judged the sample, as ``latest_judgements`` reads them):

- a rubric (or imported) judge's score 1..5 becomes a 0/1 verdict, 1 =
  consistent when the score is >= 4 (DESIGN.md); the evaluation reads 0/1
  outputs as verdicts whatever the threshold;
- an NLI judge's p is a probability of consistency (consistent when >= the
  evaluation's threshold);
- a failed judgement (parse error or endpoint error) is None: the evaluation
  counts it as invalid, as it does a sample the judge never judged.
"""

from __future__ import annotations

from annotate.models import Project
from judging.models import Judgement

CONSISTENT_FROM = 4  # a 1-5 score at or above this says "consistent"
DETECTOR_PREFIX = "judge:"


def detector_name(judge_name: str) -> str:
    """How a judge is named among the detectors: ``judge:<name>``, apart from sample metadata keys."""
    return f"{DETECTOR_PREFIX}{judge_name}"


def prediction_of(status: str, score: int | None, probability: float | None) -> float | int | None:
    """One judgement as a detector output: p, a 0/1 verdict from the score, or None when it failed."""
    if status != Judgement.Status.OK:
        return None
    if probability is not None:
        return probability
    if score is not None:
        return 1 if score >= CONSISTENT_FROM else 0
    return None


def judge_predictions(project: Project) -> dict[str, dict[int, float | int | None]]:
    """``{"judge:<name>": {sample_id: prediction}}`` for every judge of the project that judged samples.

    One query over the project's sample judgements, oldest run first, so a
    later run's judgement of a sample replaces an earlier one (the latest
    judgement per judge and sample, whatever its status).
    """
    rows = (
        Judgement.objects.filter(run__project=project, sample__isnull=False)
        .order_by("run__created_at", "run_id")
        .values_list("run__judge__name", "sample_id", "status", "score", "probability")
    )
    predictions: dict[str, dict[int, float | int | None]] = {}
    for judge_name, sample_id, status, score, probability in rows.iterator(chunk_size=5000):
        predictions.setdefault(detector_name(judge_name), {})[sample_id] = prediction_of(status, score, probability)
    return predictions
