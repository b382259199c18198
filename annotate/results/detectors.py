"""Detector evaluation, one value at a time: which metadata keys are detectors, how an output is read (a
probability or a 0/1 verdict, missing or invalid), and balanced accuracy and F1-macro against the human truth.
Pure: no Django imports.
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

# The human truth of detector evaluation (DESIGN.md: hallucinated when the worst label is U or Q, configurable),
# by the name the detector_eval command (--hallucinated), the detector-eval API and the results page take.
TRUTH_SETS: dict[str, frozenset[str]] = {
    "U": frozenset({"U"}),
    "UQ": frozenset({"U", "Q"}),
    "UQB": frozenset({"U", "Q", "B"}),
}
DEFAULT_TRUTH = "UQ"
HALLUCINATED: frozenset[str] = TRUTH_SETS[DEFAULT_TRUTH]
# Sample metadata keys that name the generator rather than score the sample.
GENERATOR_KEYS: frozenset[str] = frozenset({"summarizer", "generator"})


def is_score(value: Any) -> bool:
    """A usable prediction: a real finite number in [0, 1]. Bools and strings are not."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    try:
        number = float(value)
    except OverflowError:  # an integer beyond float range: a number, just not a score
        return False
    return math.isfinite(number) and 0.0 <= number <= 1.0


def is_score_text(value: Any) -> bool:
    """A score written as text ("0.21"): the value a detector meant, yet not read as a number.

    Such a value is never coerced (a string is no prediction, and guessing
    whether "1" is a verdict or a probability is not ours to do): it counts as
    invalid, but as a detector's value when telling which keys are detectors.
    """
    if not isinstance(value, str):
        return False
    try:
        number = float(value.strip())
    except ValueError:
        return False
    return math.isfinite(number) and 0.0 <= number <= 1.0


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(float(value))


def detector_order(names: Iterable[str]) -> list[str]:
    """Detectors by name, case-insensitively (the exact name breaks a tie): how every list and report orders them.

    Not the metadata's key order: PostgreSQL's jsonb keeps a sample's keys sorted by length, then bytes, and SQLite
    keeps them as written, so first-seen order differed between the databases and meant nothing to a reader.
    """
    return sorted(names, key=lambda name: (name.casefold(), name))


def by_detector_name(report: Mapping[str, Any]) -> dict[str, Any]:
    """A ``{detector: figures}`` report in detector_order (one merged from several sources, say)."""
    return {name: report[name] for name in detector_order(report)}


def detector_keys(metadatas: Iterable[Mapping[str, Any]], exclude: Iterable[str] = GENERATOR_KEYS) -> list[str]:
    """Metadata keys that hold a detector's outputs, in detector_order.

    A key counts as a detector when its values across samples look like
    scores: numbers in [0, 1], or such numbers written as text ("0.21",
    is_score_text), are at least as many as its other values that are not
    null, and there is at least one. DESIGN.md says only how a prediction is
    read (a probability in [0, 1] or a 0/1 verdict) and that missing or invalid
    ones are excluded and counted; this rule is ours. It keeps a detector whose
    output is text or out of range on some rows (those rows count as invalid:
    a tie keeps it, so a two-sample project does not lose a detector to one
    broken value) while ignoring text fields and numeric ids such as
    FaithBench's ``raw_sample_id``. Bools are not numbers here.
    """
    excluded = set(exclude)
    numeric: Counter[str] = Counter()  # readable scores and scores written as text
    other: Counter[str] = Counter()
    for metadata in metadatas:
        for key, value in metadata.items():
            if key in excluded:
                continue
            if value is None or (isinstance(value, float) and math.isnan(value)):
                continue
            if is_score(value) or is_score_text(value):
                numeric[key] += 1
            else:
                other[key] += 1
    return detector_order(key for key in numeric if numeric[key] >= other[key])


def verdict_detectors(predictions: Mapping[str, Mapping[Hashable, Any]]) -> set[str]:
    """Detectors that give 0/1 verdicts: every valid output is exactly 0 or 1.

    Their 1 means consistent whatever the threshold; the threshold only applies
    to probabilities. (A probability detector that only ever printed 0 and 1
    reads the same either way for any threshold in (0, 1].)
    """
    verdicts = set()
    for detector, outputs in predictions.items():
        valid = [value for value in outputs.values() if is_score(value)]
        if valid and all(float(value) in (0.0, 1.0) for value in valid):
            verdicts.add(detector)
    return verdicts


def binarise(value: Any, threshold: float, verdict: bool) -> bool | None:
    """True = predicted consistent, False = hallucinated, None = missing or invalid."""
    if not is_score(value):
        return None
    if verdict:
        return float(value) == 1.0
    return float(value) >= threshold


def is_missing(value: Any) -> bool:
    """No output at all: None or NaN (a sample a detector never scored). Missing is not invalid (DESIGN.md)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def decision_rule(verdict: bool, threshold: float) -> str:
    """How a detector's output is read, as the results table shows it per row."""
    return "1 = consistent (0/1 verdict)" if verdict else f"p >= {threshold:g}"


def truth_set(name: str) -> frozenset[str]:
    """The worst labels that count as hallucinated under truth set ``name`` (a key of TRUTH_SETS)."""
    if not isinstance(name, str) or name not in TRUTH_SETS:
        raise ValueError(f"hallucinated must be one of {', '.join(TRUTH_SETS)}, not {name!r}")
    return TRUTH_SETS[name]


def truth_text(name: str) -> str:
    """How a truth set reads in a sentence: "U or Q"."""
    codes = [code for code in ("U", "Q", "B") if code in truth_set(name)]
    return codes[0] if len(codes) == 1 else f"{', '.join(codes[:-1])} or {codes[-1]}"


def check_threshold(threshold: float) -> float:
    if not _is_number(threshold) or not 0.0 <= float(threshold) <= 1.0:
        raise ValueError(f"threshold must be a number between 0 and 1, not {threshold!r}")
    return float(threshold)


def evaluate_detectors(
    predictions: Mapping[str, Mapping[Hashable, Any]],
    truths: Mapping[Hashable, str],
    threshold: float = 0.5,
    hallucinated: frozenset[str] = HALLUCINATED,
) -> dict[str, dict[str, Any]]:
    """``{detector: {"n", "missing", "invalid", "balanced_accuracy", "f1_macro", "rule"}}`` over the samples in
    ``truths``, in detector_order.

    ``predictions[detector][sample]`` is a probability of consistency (consistent
    when >= threshold) or a 0/1 verdict (1 = consistent; see verdict_detectors).
    DESIGN.md: missing or invalid predictions are excluded and counted.
    ``invalid`` counts every prediction left out of the metrics: a sample the
    detector has no output for (absent, None or NaN) and an output that is no
    usable score (a bool, a string, a number written as text, a number outside [0, 1]). ``missing`` counts
    the first kind alone, so it is part of ``invalid``, never added to it:
    ``n`` counts the valid predictions, n + invalid is the number of samples,
    and invalid - missing the unusable outputs. ``rule`` says how outputs were read.
    The human truth of a sample is "hallucinated" when its worst
    category is in ``hallucinated`` (default U or Q), else "consistent".

    Metrics are scikit-learn's, in percent rounded to 2 decimals, None when n
    is 0. When the truth holds only one class, balanced accuracy is the recall
    of that class (sklearn averages recall over the classes present in the
    truth), and F1-macro averages over the classes present in truth or
    predictions, a class with no true positive scoring 0.
    """
    threshold = check_threshold(threshold)
    verdicts = verdict_detectors(predictions)
    report: dict[str, dict[str, Any]] = {}
    for detector in detector_order(predictions):
        outputs = predictions[detector]
        truth_labels: list[int] = []
        predicted_labels: list[int] = []
        missing = invalid = 0
        for sample, category in truths.items():
            value = outputs.get(sample)
            predicted = binarise(value, threshold, detector in verdicts)
            if predicted is None:
                if is_missing(value):
                    missing += 1
                else:
                    invalid += 1
                continue
            truth_labels.append(0 if category in hallucinated else 1)
            predicted_labels.append(1 if predicted else 0)
        report[detector] = (
            {"n": len(truth_labels), "invalid": missing + invalid, "missing": missing}
            | metric_scores(truth_labels, predicted_labels)
            | {"rule": decision_rule(detector in verdicts, threshold)}
        )
    return report


def metric_scores(truth: Sequence[int] | np.ndarray, predicted: Sequence[int] | np.ndarray) -> dict[str, float | None]:
    if not len(truth):
        return {"balanced_accuracy": None, "f1_macro": None}
    import warnings

    # Imported here: scikit-learn takes a second to import and most callers of this module never need it.
    from sklearn.metrics import balanced_accuracy_score, f1_score

    with warnings.catch_warnings():
        # sklearn warns when the truth has one class; the docstring says what we report then.
        warnings.simplefilter("ignore")
        balanced = balanced_accuracy_score(truth, predicted)
        f1 = f1_score(truth, predicted, average="macro", zero_division=0)
    return {"balanced_accuracy": round(100 * float(balanced), 2), "f1_macro": round(100 * float(f1), 2)}
