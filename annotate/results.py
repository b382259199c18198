"""FaithBench results: hallucination rates, detector evaluation, challenging samples.

Pure: no Django imports. Inputs are plain values that annotate/services/stats/
builds from the database (or that a script builds from files).
"""

from __future__ import annotations

import math
import numbers
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

RATE_COLUMNS: dict[str, frozenset[str]] = {
    "U": frozenset({"U"}),
    "U+Q": frozenset({"U", "Q"}),
    "U+Q+B": frozenset({"U", "Q", "B"}),
}
HALLUCINATED: frozenset[str] = frozenset({"U", "Q"})
# Sample metadata keys that name the generator rather than score the sample.
GENERATOR_KEYS: frozenset[str] = frozenset({"summarizer", "generator"})


def _percent(part: int, whole: int) -> float:
    return round(100 * part / whole, 2)


def hallucination_rates(samples: Iterable[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """``{generator: {"n", "U", "U+Q", "U+Q+B"}}`` from (generator, worst category) pairs.

    The category is the worst label over all the batch's annotators; a rate is
    the share of the generator's samples whose category is in the column's set,
    in percent rounded to 2 decimals. Generators are in name order.
    """
    pairs = Counter(samples)  # one pass at C speed; 100,000 samples have a few dozen distinct pairs
    totals: Counter[str] = Counter()
    hits: dict[str, Counter[str]] = defaultdict(Counter)
    for (generator, category), count in pairs.items():
        totals[generator] += count
        for column, members in RATE_COLUMNS.items():
            if category in members:
                hits[generator][column] += count
    return {
        generator: {"n": totals[generator]}
        | {column: _percent(hits[generator][column], totals[generator]) for column in RATE_COLUMNS}
        for generator in sorted(totals)
    }


def rank_generators(rates: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """``{column: {generator: rank}}``: rank 1 = lowest rate; equal rates share a rank (1, 2, 2, 4).

    Ranks compare the rates as reported (rounded), so generators that show the
    same number get the same rank.
    """
    ranks: dict[str, dict[str, int]] = {}
    for column in RATE_COLUMNS:
        ordered = sorted(rates, key=lambda generator: (rates[generator][column], generator))
        column_ranks: dict[str, int] = {}
        for position, generator in enumerate(ordered, start=1):
            previous = ordered[position - 2] if position > 1 else None
            if previous is not None and rates[previous][column] == rates[generator][column]:
                column_ranks[generator] = column_ranks[previous]
            else:
                column_ranks[generator] = position
        ranks[column] = column_ranks
    return ranks


# --------------------------------------------------------------------------- detectors


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


def _check_threshold(threshold: float) -> float:
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
    threshold = _check_threshold(threshold)
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
            | _scores(truth_labels, predicted_labels)
            | {"rule": decision_rule(detector in verdicts, threshold)}
        )
    return report


def _scores(truth: Sequence[int] | np.ndarray, predicted: Sequence[int] | np.ndarray) -> dict[str, float | None]:
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


def challenging_samples(
    samples: Mapping[Hashable, Mapping[str, Any]], threshold: float = 0.5, verdicts: Iterable[str] | None = None
) -> set[Hashable]:
    """Samples on which the detectors disagree: their valid binarised verdicts are not all equal.

    ``samples[sample][detector]`` is the detector's output. A sample with fewer
    than two valid outputs cannot show disagreement and is not challenging.
    ``verdicts`` names the 0/1 detectors; by default they are found from the data.
    """
    threshold = _check_threshold(threshold)
    if verdicts is None:
        by_detector: dict[str, dict[Hashable, Any]] = defaultdict(dict)
        for sample, outputs in samples.items():
            for detector, value in outputs.items():
                by_detector[detector][sample] = value
        verdicts = verdict_detectors(by_detector)
    verdict_set = set(verdicts)
    challenging = set()
    for sample, outputs in samples.items():
        answers = {
            answer
            for detector, value in outputs.items()
            if (answer := binarise(value, threshold, detector in verdict_set)) is not None
        }
        if len(answers) > 1:
            challenging.add(sample)
    return challenging


def challenging_groups(
    groups: Mapping[Hashable, Mapping[Hashable, Mapping[str, Any]]], k: int, threshold: float = 0.5
) -> list[dict[str, Any]]:
    """Passage groups ranked by how many of their samples are challenging, keeping those with >= k.

    ``groups[passage][sample][detector]`` is a detector output. Verdict
    detectors are found over all groups at once. Returns
    ``[{"group", "challenging", "samples"}]``, most challenging first, ties in
    the groups' given order (FaithBench kept passages with at least 7 of 10).
    """
    everything = {(group, sample): outputs for group, members in groups.items() for sample, outputs in members.items()}
    hard = challenging_samples(everything, threshold)
    ranked = [
        {
            "group": group,
            "challenging": sum((group, sample) in hard for sample in members),
            "samples": len(members),
        }
        for group, members in groups.items()
    ]
    ranked.sort(key=lambda entry: -entry["challenging"])  # stable: ties keep the given order
    return [entry for entry in ranked if entry["challenging"] >= k]


# --------------------------------------------------------------------------- detectors over many samples
# The same rules as detector_keys, verdict_detectors, binarise, evaluate_detectors
# and challenging_samples, on every sample's metadata classified once into
# arrays: a results page over 100,000 samples looks at each value once.

_ABSENT, _SCORE, _OTHER, _SCORE_TEXT = 0, 1, 2, 3


@dataclass
class DetectorOutputs:
    """Every metadata key's value in every sample, classified once.

    ``status[key][i]``: 0 when sample i has no such key, null or NaN (not
    counted by detector_keys), 1 for a score (is_score), 3 for a score written
    as text (is_score_text: a detector's value, yet invalid), 2 for anything else.
    ``scores[key][i]``: the score where status is 1, else NaN.
    """

    size: int
    status: dict[str, np.ndarray]
    scores: dict[str, np.ndarray]

    def detector_keys(self, rows: np.ndarray) -> list[str]:
        """detector_keys of the metadata of samples ``rows`` (in detector_order)."""
        keys = []
        for key, every_status in self.status.items():
            status = every_status[rows]
            numeric = int(((status == _SCORE) | (status == _SCORE_TEXT)).sum())
            if numeric > 0 and numeric >= int((status == _OTHER).sum()):
                keys.append(key)
        return detector_order(keys)

    def verdicts(self, keys: Iterable[str], rows: np.ndarray) -> set[str]:
        """verdict_detectors of these detectors over samples ``rows``."""
        found = set()
        for key in keys:
            valid = self.scores[key][rows][self.status[key][rows] == _SCORE]
            if len(valid) and bool(np.isin(valid, (0.0, 1.0)).all()):
                found.add(key)
        return found

    def predictions(self, key: str, rows: np.ndarray, threshold: float, verdict: bool) -> tuple[np.ndarray, np.ndarray]:
        """(valid, consistent) for samples ``rows``: binarise, as arrays."""
        valid = self.status[key][rows] == _SCORE
        scores = self.scores[key][rows]
        with np.errstate(invalid="ignore"):
            consistent = scores == 1.0 if verdict else scores >= threshold
        return valid, consistent & valid


def _classify_values(values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(status, scores) of one key's values, None meaning absent (see DetectorOutputs)."""
    kinds = set(map(type, values))
    if kinds <= {float, int, type(None)}:  # the usual case, with arrays: None and NaN become NaN
        try:
            numbers = np.array(values, dtype=np.float64)
        except OverflowError:  # an integer too large for a float: the general path says what it is
            pass
        else:
            absent = np.isnan(numbers)
            with np.errstate(invalid="ignore"):
                score = ~absent & (numbers >= 0.0) & (numbers <= 1.0)
            status = np.where(absent, _ABSENT, np.where(score, _SCORE, _OTHER)).astype(np.int8)
            return status, np.where(score, numbers, np.nan)
    status = np.zeros(len(values), dtype=np.int8)
    scores = np.full(len(values), np.nan)
    for index, value in enumerate(values):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if is_score(value):
            status[index] = _SCORE
            scores[index] = float(value)
        else:
            status[index] = _SCORE_TEXT if is_score_text(value) else _OTHER
    return status, scores


def classify_detector_outputs(
    metadatas: Sequence[Mapping[str, Any]], exclude: Iterable[str] = GENERATOR_KEYS
) -> DetectorOutputs:
    """Classify every value of every sample's metadata once (see DetectorOutputs)."""
    excluded = set(exclude)
    layouts = {tuple(metadata) for metadata in metadatas}  # the distinct key sets: few, whatever the sample count
    keys = {key for keys in layouts for key in keys if key not in excluded}
    status: dict[str, np.ndarray] = {}
    scores: dict[str, np.ndarray] = {}
    for key in detector_order(keys):
        status[key], scores[key] = _classify_values([metadata.get(key) for metadata in metadatas])
    return DetectorOutputs(size=len(metadatas), status=status, scores=scores)


def evaluate_detector_outputs(
    outputs: DetectorOutputs,
    rows: np.ndarray,
    categories: Sequence[str],
    threshold: float = 0.5,
    hallucinated: frozenset[str] = HALLUCINATED,
    keys: Sequence[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """evaluate_detectors of every detector found in the metadata of samples ``rows``, in detector_order.

    ``categories[j]`` is the worst human category of sample ``rows[j]``. With
    ``keys``, exactly those detectors are evaluated, whatever their values look
    like (the project's judges: known to be detectors even when most of their
    answers failed).
    """
    threshold = _check_threshold(threshold)
    keys = outputs.detector_keys(rows) if keys is None else detector_order(key for key in keys if key in outputs.status)
    verdicts = outputs.verdicts(keys, rows)
    truth = np.array([0 if category in hallucinated else 1 for category in categories], dtype=np.int64)
    report: dict[str, dict[str, Any]] = {}
    for key in keys:
        valid, consistent = outputs.predictions(key, rows, threshold, key in verdicts)
        predicted = consistent[valid].astype(np.int64)
        status = outputs.status[key][rows]
        report[key] = (
            # DESIGN.md's "invalid": every prediction left out, missing or unusable; "missing": those of them absent.
            {"n": int(valid.sum()), "invalid": int((status != _SCORE).sum()),
             "missing": int((status == _ABSENT).sum())}
            | _scores(truth[valid], predicted)
            | {"rule": decision_rule(key in verdicts, threshold)}
        )
    return report


def challenging_mask(outputs: DetectorOutputs, keys: Sequence[str], rows: np.ndarray, threshold: float) -> np.ndarray:
    """challenging_samples over samples ``rows`` and detectors ``keys``, as a boolean array over ``rows``."""
    threshold = _check_threshold(threshold)
    verdicts = outputs.verdicts(keys, rows)
    says_consistent = np.zeros(len(rows), dtype=bool)
    says_hallucinated = np.zeros(len(rows), dtype=bool)
    for key in keys:
        valid, consistent = outputs.predictions(key, rows, threshold, key in verdicts)
        says_consistent |= consistent
        says_hallucinated |= valid & ~consistent
    return says_consistent & says_hallucinated
