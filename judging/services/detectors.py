"""The project's judges as detectors of the FaithBench detector evaluation (results page, ``detector_eval``).

A judge's prediction for a sample is its latest judgement of it (from the most
recent run that judged the sample, as ``latest_judgements`` reads them):

- a rubric (or imported) judge's score 1..5 becomes a 0/1 verdict, 1 =
  consistent when the score is >= 4 (DESIGN.md); the evaluation reads 0/1
  outputs as verdicts whatever the threshold;
- an NLI judge's p is a probability of consistency (consistent when >= the
  evaluation's threshold);
- a failed judgement (parse error or endpoint error) is an answer that is no
  usable score: its status stands in for the prediction, and the evaluation
  counts it as invalid;
- a sample the judge never judged (a run over the flagged samples only, a
  batch) has no prediction at all: the evaluation leaves it out of n and counts
  it in ``invalid`` (DESIGN.md: missing or invalid predictions are excluded and
  counted) and in ``missing``, so a page can tell the two apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from annotate.models import Project
from judging.models import Judge, Judgement

CONSISTENT_FROM = 4  # a 1-5 score at or above this says "consistent"
DETECTOR_PREFIX = "judge:"
SCORE_RULE = f"score >= {CONSISTENT_FROM} (1-5 score)"

Prediction = float | int | str  # p, a 0/1 verdict, or the status of a judgement that gave no usable score


@dataclass
class JudgeDetector:
    """One judge's predictions per sample id, and whether they come from 1-5 scores, from probabilities, or both."""

    predictions: dict[int, Prediction] = field(default_factory=dict)
    from_scores: bool = False
    from_probabilities: bool = False

    def rule(self, threshold: float) -> str:
        """How this judge's answers are read, for the results table's rule column."""
        rules = []
        if self.from_scores:
            rules.append(SCORE_RULE)
        if self.from_probabilities:
            rules.append(f"p >= {threshold:g}")
        return "; ".join(rules) or SCORE_RULE  # an imported judge with no number at all: its scores would be 1-5


def detector_name(judge_name: str) -> str:
    """How a judge is named among the detectors: ``judge:<name>``, apart from sample metadata keys."""
    return f"{DETECTOR_PREFIX}{judge_name}"


def prediction_of(status: str, score: int | None, probability: float | None) -> Prediction:
    """One judgement as a detector output: p, a 0/1 verdict from the score, or (no usable score) its status."""
    if status != Judgement.Status.OK:
        return status
    if probability is not None:
        return probability
    if score is not None:
        return 1 if score >= CONSISTENT_FROM else 0
    return status  # "ok" without a number (an import can say so): an answer, but not a usable one


def judge_detectors(project: Project) -> dict[str, JudgeDetector]:
    """``{"judge:<name>": JudgeDetector}`` for every judge of the project that judged samples.

    One query over the project's sample judgements, oldest run first, so a
    later run's judgement of a sample replaces an earlier one (the latest
    judgement per judge and sample, whatever its status). A rubric judge reads
    as scores and an NLI judge as probabilities even when every answer failed;
    an imported judge reads as what its answers hold.
    """
    rows = (
        Judgement.objects.filter(run__project=project, sample__isnull=False)
        .order_by("run__created_at", "run_id")
        .values_list("run__judge__name", "run__judge__kind", "sample_id", "status", "score", "probability")
    )
    detectors: dict[str, JudgeDetector] = {}
    for judge_name, kind, sample_id, status, score, probability in rows.iterator(chunk_size=5000):
        detector = detectors.setdefault(detector_name(judge_name), JudgeDetector())
        detector.predictions[sample_id] = prediction_of(status, score, probability)
        detector.from_scores |= kind == Judge.Kind.RUBRIC or score is not None
        detector.from_probabilities |= kind == Judge.Kind.NLI or probability is not None
    return detectors


def judge_predictions(project: Project) -> dict[str, dict[int, Prediction]]:
    """``{"judge:<name>": {sample_id: prediction}}`` (see judge_detectors)."""
    return {name: detector.predictions for name, detector in judge_detectors(project).items()}
