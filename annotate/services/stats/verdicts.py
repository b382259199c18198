"""Sample verdicts and results: worst labels, hallucination rates, detector evaluation, challenging groups."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from annotate import results
from annotate.agreement import CATEGORIES
from annotate.models import Batch, Passage, Project
from annotate.services.stats.readers import _read_samples, _read_spans, _Samples
from annotate.services.stats.rosters import _check_round, _roster

UNKNOWN_GENERATOR = "(unknown)"
_IN_CHUNK = 900  # ids per ``pk__in`` query, below every backend's parameter limit


@dataclass
class SampleVerdict:
    """A sample's worst label over all the annotators who submitted its batch."""

    sample_id: int
    batch_id: int
    passage_id: int
    generator: str
    category: str
    metadata: dict[str, Any]


@dataclass
class _Verdicts:
    rows: np.ndarray  # sample rows, by batch id, then position, then id
    generators: list[str]
    categories: list[str]


def _verdicts(project: Project, round: int, samples: _Samples) -> _Verdicts:
    """Worst category per sample of a submitted batch, over the annotators who submitted that batch.

    Samples of batches nobody submitted in the round are left out: they have
    no human label yet. A span counts when its annotator submitted the
    sample's batch in the round (DESIGN.md: "over all the batch's
    annotators"); work in progress on a batch one has not submitted does not.
    Admin exclusion is for agreement only.
    """
    _check_round(project, round)
    roster = _roster(project, round)
    rows = np.flatnonzero(np.isin(samples.batch, np.array(list(roster.submitted), dtype=np.int64)))
    rows = rows[np.lexsort((samples.ids[rows], samples.position[rows], samples.batch[rows]))]
    spans = _read_spans(project, round)
    index = samples.index_of(spans.sample)
    # (batch, user) pairs as one integer each, so one np.isin tells which spans count.
    stride = max(roster.usernames, default=0) + 1
    submitted = np.array(
        [batch * stride + user for batch, users in roster.submitted_ids.items() for user in users], dtype=np.int64
    )
    span_batch = np.where(index >= 0, samples.batch[np.maximum(index, 0)], -1)
    counted = (index >= 0) & (spans.user < stride) & np.isin(span_batch * stride + spans.user, submitted)
    worst = np.zeros(len(samples.ids), dtype=np.int8)
    np.maximum.at(worst, index[counted], spans.code[counted])
    return _Verdicts(
        rows=rows,
        generators=[samples.generator[row] or UNKNOWN_GENERATOR for row in rows.tolist()],
        categories=[CATEGORIES[code] for code in worst[rows].tolist()],
    )


def sample_worst_labels(project: Project, round: int = 1, *, with_metadata: bool = False) -> list[SampleVerdict]:
    """Worst category per sample over the annotators who submitted its batch (exclusion is for agreement only).

    Samples of batches nobody submitted in the round are left out: they have no
    human label yet. ``metadata`` is filled only when asked (detector outputs).
    """
    samples = _read_samples(project, metadata=with_metadata)
    found = _verdicts(project, round, samples)
    return [
        SampleVerdict(
            sample_id=int(samples.ids[row]),
            batch_id=int(samples.batch[row]),
            passage_id=int(samples.passage[row]),
            generator=generator,
            category=category,
            metadata=samples.metadata[row] if with_metadata else {},
        )
        for row, generator, category in zip(found.rows.tolist(), found.generators, found.categories, strict=True)
    ]


def _distribution(found: _Verdicts) -> dict[str, dict[str, int]]:
    counts = Counter(zip(found.generators, found.categories, strict=True))
    generators = sorted({generator for generator, _ in counts})
    return {
        generator: {"n": sum(counts[(generator, category)] for category in CATEGORIES)}
        | {category: counts[(generator, category)] for category in CATEGORIES}
        for generator in generators
    }


def project_halu_rates(project: Project, round: int = 1) -> dict[str, dict[str, Any]]:
    found = _verdicts(project, round, _read_samples(project))
    return results.hallucination_rates(zip(found.generators, found.categories, strict=True))


def explained_halu_rates(project: Project, round: int = 1) -> dict[str, dict[str, Any]]:
    """project_halu_rates with every generator of the project: one without a judged sample has n 0, null rates and
    a ``reason`` (the results API's object).

    A round's rates are those of its submitted verdicts (DESIGN.md: the worst label over the batch's annotators,
    who are those who submitted it), so before anyone submits a batch in round 2 no rate of round 2 exists. The
    results page then says "No submitted samples in this round"; an empty object said nothing, and a rate of 0
    would claim a generator never hallucinates.
    """
    samples = _read_samples(project)
    found = _verdicts(project, round, samples)
    rates = results.hallucination_rates(zip(found.generators, found.categories, strict=True))
    counts = Counter(generator or UNKNOWN_GENERATOR for generator in samples.generator)
    for generator in set(counts) - set(rates):
        if len(found.rows):
            reason = (f"none of {generator}'s {counts[generator]} samples is in a batch submitted in round {round}: "
                      "a rate counts the samples with a submitted verdict")
        else:
            reason = (f"no sample has a submitted verdict in round {round} yet: the rates are computed once "
                      f"annotators submit a batch in round {round}")
        rates[generator] = {"n": 0} | {column: None for column in results.RATE_COLUMNS} | {"reason": reason}
    return dict(sorted(rates.items()))


def worst_label_distribution(project: Project, round: int = 1) -> dict[str, dict[str, int]]:
    """``{generator: {"n", "C", "B", "Q", "U"}}``: how many samples got each worst label (all submitters)."""
    return _distribution(_verdicts(project, round, _read_samples(project)))


def project_detector_eval(
    project: Project, threshold: float = 0.5, round: int = 1, hallucinated: str = results.DEFAULT_TRUTH
) -> dict[str, dict[str, Any]]:
    """Every numeric metadata key (but the generator's) and every judge evaluated against the worst human label,
    in results.detector_order (the judges, ``judge:<name>``, among the rest).

    ``hallucinated`` names the truth (a key of results.TRUTH_SETS): a sample is hallucinated when its worst label
    is in that set ("UQ", U or Q, by default)."""
    truth = results.truth_set(hallucinated)
    samples = _read_samples(project, metadata=True)
    found = _verdicts(project, round, samples)
    outputs = results.classify_detector_outputs(samples.metadata)
    report = results.evaluate_detector_outputs(outputs, found.rows, found.categories, threshold, truth)
    return results.by_detector_name(report | _judge_detector_eval(project, samples, found, threshold, truth))


def explained_detector_eval(
    project: Project, threshold: float = 0.5, round: int = 1, hallucinated: str = results.DEFAULT_TRUTH
) -> dict[str, dict[str, Any]]:
    """project_detector_eval with every detector of the project, and a ``reason`` beside each undefined figure
    (the results API's object).

    project_detector_eval finds the metadata detectors among the samples with a verdict in the round, so before
    anyone submits a batch in round 2 it dropped them all while listing the judges with n 0. The results page
    finds them over every sample, as its selection does, and says why they are not scored; here each is a row
    with n 0 and null figures, its ``invalid`` and ``missing`` counted over the judged samples as for any
    detector, and its rule read from all its outputs. Every row with n 0 (judges too) says why in ``reason``.
    """
    truth = results.truth_set(hallucinated)
    samples = _read_samples(project, metadata=True)
    found = _verdicts(project, round, samples)
    outputs = results.classify_detector_outputs(samples.metadata)
    report = results.evaluate_detector_outputs(outputs, found.rows, found.categories, threshold, truth)
    every = np.arange(len(samples.ids))
    unscored = [name for name in outputs.detector_keys(every) if name not in report]
    if unscored:
        forced = results.evaluate_detector_outputs(
            outputs, found.rows, found.categories, threshold, truth, keys=unscored
        )
        verdicts = outputs.verdicts(unscored, every)
        for name, row in forced.items():
            report[name] = row | {"rule": results.decision_rule(name in verdicts, threshold)}
    report |= _judge_detector_eval(project, samples, found, threshold, truth)
    for name, row in report.items():
        if row["n"] == 0:
            row["reason"] = _unscored_reason(name, row, len(found.rows), round)
    return results.by_detector_name(report)


def _unscored_reason(name: str, row: dict[str, Any], judged: int, round: int) -> str:
    """Why a detector has no figures in the round: no verdict yet, no output on the judged samples, or none usable."""
    if not judged:
        return (f"no sample has a submitted verdict in round {round} yet to compare the outputs of {name} with: "
                f"detectors are scored once annotators submit a batch in round {round}")
    if row["missing"] == judged:
        return (f"none of the {judged} samples with a submitted verdict in round {round} has an output of {name}: "
                "a detector is scored on the samples it judged")
    return (f"none of the outputs of {name} on the {judged} samples with a submitted verdict in round {round} is a "
            f"usable score ({row['invalid'] - row['missing']} invalid, {row['missing']} missing)")


def _judge_detector_eval(
    project: Project, samples: _Samples, found: _Verdicts, threshold: float,
    hallucinated: frozenset[str] = results.HALLUCINATED,
) -> dict[str, Any]:
    """The project's judges (judging app) as detectors ``judge:<name>``: each one's latest judgement per sample.

    Evaluated by the same rules, and against the same truth, as the metadata detectors (a rubric judge's
    0/1 verdicts read as verdicts, an NLI judge's p against the threshold).
    A failed judgement is an invalid prediction; a sample the judge never
    judged is missing, not invalid (judging.services.detectors). Every judge
    is evaluated, even one whose answers mostly failed, and its ``rule`` is
    the judge's own (a 1-5 score counts as consistent at >= 4). They stay out
    of the challenging selection, which is FaithBench's choice of what to annotate.
    """
    from judging.services.detectors import judge_detectors  # judging builds on annotate, not the reverse

    detectors = judge_detectors(project)
    if not detectors:
        return {}
    outputs_by_row: list[dict[str, Any]] = [{} for _ in range(len(samples.ids))]
    for name, detector in detectors.items():
        by_sample = detector.predictions
        rows = samples.index_of(np.fromiter(by_sample, dtype=np.int64, count=len(by_sample)))
        for row, value in zip(rows.tolist(), by_sample.values(), strict=True):
            if row >= 0:
                outputs_by_row[row][name] = value
    judged = results.classify_detector_outputs(outputs_by_row)
    report = results.evaluate_detector_outputs(
        judged, found.rows, found.categories, threshold, hallucinated, keys=list(detectors)
    )
    for name, row in report.items():
        row["rule"] = detectors[name].rule(threshold)
    return report


def _passage_names(passage_ids: Sequence[int]) -> dict[int, str]:
    names: dict[int, str] = {}
    for start in range(0, len(passage_ids), _IN_CHUNK):
        chunk = passage_ids[start : start + _IN_CHUNK]
        names.update(Passage.objects.filter(pk__in=chunk).values_list("pk", "external_id"))
    return names


def _challenging(
    project: Project, samples: _Samples, outputs: results.DetectorOutputs, k: int, threshold: float
) -> dict[str, Any]:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive whole number, not {k!r}")
    positions = dict(Batch.objects.filter(project=project).values_list("id", "position"))
    batch_position = np.array([positions[batch] for batch in samples.batch.tolist()], dtype=np.int64)
    order = np.lexsort((samples.ids, samples.position, samples.batch, batch_position, samples.passage))
    seen: set[tuple[int, str, str]] = set()
    kept_rows = []
    for row in order.tolist():  # a (generator, summary) copied into a later batch counts once per passage
        key = (int(samples.passage[row]), samples.generator[row], samples.summary[row])
        if key not in seen:
            seen.add(key)
            kept_rows.append(row)
    rows = np.array(kept_rows, dtype=np.int64)
    detectors = outputs.detector_keys(rows)
    # Rows are in passage order, so np.unique's order is the groups' order of first appearance.
    passages, group_of, sizes = np.unique(samples.passage[rows], return_inverse=True, return_counts=True)
    kept: list[dict[str, Any]] = []
    most = 0  # the most challenging samples any group has: what k may be at most to keep a group
    if len(detectors) >= 2:
        hard = results.challenging_mask(outputs, detectors, rows, threshold)
        challenging = np.bincount(group_of.reshape(-1)[hard], minlength=len(passages))
        most = int(challenging.max()) if len(challenging) else 0
        for group in np.argsort(-challenging, kind="stable").tolist():  # stable: ties keep the passage order
            if challenging[group] < k:
                break
            kept.append({"group": int(passages[group]), "challenging": int(challenging[group]),
                         "samples": int(sizes[group])})
    names = _passage_names([entry["group"] for entry in kept])
    return {
        "k": k,
        "threshold": float(threshold),
        "detectors": detectors,
        "groups_total": len(passages),
        "most_challenging": most,
        "kept": [
            {"passage_id": entry["group"], "passage": names.get(entry["group"], str(entry["group"])),
             "challenging": entry["challenging"], "samples": entry["samples"]}
            for entry in kept
        ],
    }


def challenging_groups(project: Project, k: int = 7, threshold: float = 0.5) -> dict[str, Any]:
    """FaithBench's selection over every sample of the project (annotated or not): detectors disagree.

    Passage groups ranked by their number of challenging samples, keeping
    those with at least k. A (generator, summary) that occurs more than once
    in a passage (copied into a later batch) counts once.
    """
    samples = _read_samples(project, metadata=True, summary=True)
    return _challenging(project, samples, results.classify_detector_outputs(samples.metadata), k, threshold)
