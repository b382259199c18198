"""FaithBench results: hallucination rates, detector evaluation, challenging samples.

Pure: no Django imports. Inputs are plain values that annotate/services/stats/
builds from the database (or that a script builds from files).

Split by topic, each module importing only those before it: ``rates`` (hallucination rates per generator and
their ranks), ``detectors`` (which keys are detectors, how one output is read, evaluate_detectors),
``challenging`` (samples the detectors disagree on, and their passages) and ``outputs`` (the same rules over
arrays, every value classified once: what the pages use). Callers import from ``annotate.results``.
"""

from __future__ import annotations

from annotate.results.challenging import challenging_groups, challenging_samples
from annotate.results.detectors import (
    DEFAULT_TRUTH,
    GENERATOR_KEYS,
    HALLUCINATED,
    TRUTH_SETS,
    binarise,
    by_detector_name,
    decision_rule,
    detector_keys,
    detector_order,
    evaluate_detectors,
    is_missing,
    is_score,
    is_score_text,
    truth_set,
    truth_text,
    verdict_detectors,
)
from annotate.results.outputs import (
    DetectorOutputs,
    challenging_mask,
    classify_detector_outputs,
    evaluate_detector_outputs,
)
from annotate.results.rates import RATE_COLUMNS, hallucination_rates, rank_generators

__all__ = [
    "DEFAULT_TRUTH",
    "GENERATOR_KEYS",
    "HALLUCINATED",
    "RATE_COLUMNS",
    "TRUTH_SETS",
    "DetectorOutputs",
    "binarise",
    "by_detector_name",
    "challenging_groups",
    "challenging_mask",
    "challenging_samples",
    "classify_detector_outputs",
    "decision_rule",
    "detector_keys",
    "detector_order",
    "evaluate_detector_outputs",
    "evaluate_detectors",
    "hallucination_rates",
    "is_missing",
    "is_score",
    "is_score_text",
    "rank_generators",
    "truth_set",
    "truth_text",
    "verdict_detectors",
]
