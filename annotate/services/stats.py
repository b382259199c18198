"""Agreement and results of a project, read from the database: the one service behind them all.

The agreement, halu_rates and detector_eval commands, the results API and the
agreement, disputes and results pages all take their numbers from here
(the pages through the figure store in annotate.services.results_cache).

Reading is built for 100,000 samples: each figure set reads the rows it
needs once (values_list of the needed columns, no ORM objects, no default
ordering), span labels are read as JSON text and classified once per distinct
text, and the rows are turned into numpy arrays for the pure modules
annotate.agreement and annotate.results, which hold every rule. The page
figure sets (``results_figures``, ``agreement_figures``, ``span_figures``)
compute everything a page shows from one such read.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db.models import TextField
from django.db.models.functions import Cast

from annotate import agreement, results
from annotate.agreement import CATEGORIES
from annotate.models import Assignment, Batch, Passage, Project, Sample, SpanAnnotation
from annotate.taxonomy import SEVERITY, category_of, label_categories

UNKNOWN_GENERATOR = "(unknown)"
_IN_CHUNK = 900  # ids per ``pk__in`` query, below every backend's parameter limit


# --------------------------------------------------------------------------- rounds and rosters


@dataclass
class _Roster:
    """Who submitted each batch in a round, and who of them counts for agreement."""

    submitted: dict[int, list[str]] = field(default_factory=dict)  # batch id -> usernames
    submitted_ids: dict[int, list[int]] = field(default_factory=dict)  # batch id -> user ids, same order
    agreement: dict[int, list[str]] = field(default_factory=dict)
    usernames: dict[int, str] = field(default_factory=dict)  # user id -> username


def project_rounds(project: Project) -> list[int]:
    return sorted(set(Assignment.objects.filter(batch__project=project).values_list("round", flat=True)))


def _check_round(project: Project, round: int) -> None:
    if isinstance(round, bool) or not isinstance(round, int) or round < 1:
        raise ValueError(f"round must be a positive whole number, not {round!r}")
    if not Assignment.objects.filter(batch__project=project, round=round).exists():
        rounds = project_rounds(project)
        known = ", ".join(map(str, rounds)) if rounds else "none yet"
        raise ValueError(f"project {project.slug!r} has no round {round} (rounds with assignments: {known})")


def _roster(project: Project, round: int, batch_id: int | None = None) -> _Roster:
    roster = _Roster()
    rows = Assignment.objects.filter(batch__project=project, round=round, status=Assignment.Status.SUBMITTED)
    if batch_id is not None:
        rows = rows.filter(batch_id=batch_id)
    rows = rows.order_by("batch_id", "annotator__username").values_list(
        "batch_id", "annotator_id", "annotator__username", "excluded_from_agreement"
    )
    for batch_id_, user_id, username, excluded in rows:
        roster.usernames[user_id] = username
        roster.submitted.setdefault(batch_id_, []).append(username)
        roster.submitted_ids.setdefault(batch_id_, []).append(user_id)
        people = roster.agreement.setdefault(batch_id_, [])
        if not excluded:
            people.append(username)
    return roster


def batch_submitters(project: Project, round: int) -> dict[int, list[int]]:
    """Batch id -> ids of the annotators who submitted it in the round ("the batch's annotators")."""
    return _roster(project, round).submitted_ids


def _batches_in_round(project: Project, roster: _Roster) -> list[tuple[int, str]]:
    return [
        (batch_id, name)
        for batch_id, name in Batch.objects.filter(project=project).order_by("position", "id").values_list("id", "name")
        if batch_id in roster.submitted
    ]


# --------------------------------------------------------------------------- row readers


@dataclass
class _Samples:
    """Columns of the project's samples (or one batch's), in id order."""

    ids: np.ndarray
    batch: np.ndarray
    passage: np.ndarray
    position: np.ndarray
    generator: list[str]
    metadata: list[dict[str, Any]]  # empty unless asked for
    summary: list[str]  # empty unless asked for

    def index_of(self, sample_ids: np.ndarray) -> np.ndarray:
        """Row of each sample id, -1 for ids not read."""
        if not len(self.ids):
            return np.full(len(sample_ids), -1, dtype=np.int64)
        rows = np.minimum(np.searchsorted(self.ids, sample_ids), len(self.ids) - 1)
        return np.where(self.ids[rows] == sample_ids, rows, -1)


def _read_samples(
    project: Project, *, batch_id: int | None = None, metadata: bool = False, summary: bool = False
) -> _Samples:
    rows = Sample.objects.filter(project=project)
    if batch_id is not None:
        rows = rows.filter(batch_id=batch_id)
    columns: list[Any] = ["id", "batch_id", "passage_id", "position", "generator"]
    if metadata:
        columns.append(Cast("metadata", TextField()))  # parsed here: no per-row converter
    if summary:
        columns.append("summary")
    found = list(rows.order_by("id").values_list(*columns))
    parts = list(zip(*found, strict=True)) if found else [()] * len(columns)

    def numbers(index: int) -> np.ndarray:
        return np.array(parts[index], dtype=np.int64)

    parsed: list[dict[str, Any]] = []
    if metadata:  # one json.loads over all rows: twice as fast as one per row
        values = json.loads("[" + ",".join("null" if text is None else text for text in parts[5]) + "]")
        parsed = [value if isinstance(value, dict) else {} for value in values]
    return _Samples(
        ids=numbers(0),
        batch=numbers(1),
        passage=numbers(2),
        position=numbers(3),
        generator=list(parts[4]),
        metadata=parsed,
        summary=list(parts[-1]) if summary else [],
    )


@dataclass
class _Spans:
    """Spans of a round with a counted label: columns as arrays, in no particular order."""

    sample: np.ndarray
    user: np.ndarray
    code: np.ndarray  # worst category of the span's labels: C=0 .. U=3
    start: np.ndarray
    end: np.ndarray


def _read_spans(project: Project, round: int, *, batch_id: int | None = None, offsets: bool = False) -> _Spans:
    """Spans with a label that counts (an empty label list, or a row that is not a list, is ignored).

    Labels are read as JSON text; a project has few distinct label lists, so
    each distinct text is parsed and classified once.
    """
    categories = label_categories(project.taxonomy or {})
    rows = SpanAnnotation.objects.filter(sample__project=project, round=round)
    if batch_id is not None:
        rows = rows.filter(sample__batch_id=batch_id)
    columns: list[Any] = ["sample_id", "annotator_id", Cast("labels", TextField())]
    if offsets:
        columns += ["start", "end"]
    found = list(rows.order_by().values_list(*columns))
    parts = list(zip(*found, strict=True)) if found else [()] * len(columns)
    code_of: dict[str | None, int] = {}

    def classify(text: str | None) -> int:
        labels = json.loads(text) if text is not None else None
        if not isinstance(labels, list):
            return -1  # a malformed row
        category = category_of(tuple(labels), categories)
        return -1 if category is None else SEVERITY[category]

    codes = np.array([code_of[text] if text in code_of else code_of.setdefault(text, classify(text))
                      for text in parts[2]], dtype=np.int8)
    counted = codes >= 0
    return _Spans(
        sample=np.array(parts[0], dtype=np.int64)[counted],
        user=np.array(parts[1], dtype=np.int64)[counted],
        code=codes[counted],
        start=np.array(parts[3], dtype=np.int64)[counted] if offsets else np.zeros(0, dtype=np.int64),
        end=np.array(parts[4], dtype=np.int64)[counted] if offsets else np.zeros(0, dtype=np.int64),
    )


# --------------------------------------------------------------------------- agreement rosters and labels


@dataclass
class _RoundBatches:
    """The batches of a round with a submission, their samples as units, and their agreement rosters.

    Units are numbered batch after batch (batches by position, samples by
    position within a batch), as annotate.agreement numbers them.
    """

    roster: _Roster
    batches: list[tuple[int, str]]
    units: np.ndarray  # sample row of each unit
    bounds: list[tuple[int, int]]
    samples: _Samples

    @property
    def rosters(self) -> list[list[str]]:
        return [list(self.roster.agreement[batch_id]) for batch_id, _ in self.batches]

    def sample_keys(self, index: int) -> list[int]:
        start, stop = self.bounds[index]
        return self.samples.ids[self.units[start:stop]].tolist()

    def summaries(self, index: int) -> dict[int, str]:
        start, stop = self.bounds[index]
        rows = self.units[start:stop].tolist()
        return {int(self.samples.ids[row]): self.samples.summary[row] for row in rows}

    def cells(self, sample_ids: np.ndarray, user_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(batch index, roster slot, column in the batch) of each (sample, user); all -1 where it does not count.

        A pair counts when the sample is a unit and the user is in the
        agreement roster of the sample's batch.
        """
        nowhere = np.full(len(sample_ids), -1, dtype=np.int64)
        people = np.array(sorted(self.roster.usernames), dtype=np.int64)
        if not len(people) or not len(self.units):
            return nowhere, nowhere, nowhere
        unit_of_row = np.full(len(self.samples.ids), -1, dtype=np.int64)
        unit_of_row[self.units] = np.arange(len(self.units))
        rows = self.samples.index_of(sample_ids)
        unit = np.where(rows >= 0, unit_of_row[rows], -1)
        starts = np.array([start for start, _ in self.bounds], dtype=np.int64)
        batch = np.searchsorted(starts, unit, side="right") - 1
        # (batch index, person) -> slot in that batch's agreement roster, as sorted integer keys.
        person_of = {user: index for index, user in enumerate(people.tolist())}
        user_of_name = {name: user for user, name in self.roster.usernames.items()}
        slot_of: dict[int, int] = {}
        for index, (batch_id, _) in enumerate(self.batches):
            for slot, name in enumerate(self.roster.agreement[batch_id]):
                slot_of[index * len(people) + person_of[user_of_name[name]]] = slot
        if not slot_of:
            return nowhere, nowhere, nowhere
        keys = np.array(sorted(slot_of), dtype=np.int64)
        slots = np.array([slot_of[key] for key in keys.tolist()], dtype=np.int64)
        person = np.minimum(np.searchsorted(people, user_ids), len(people) - 1)
        wanted = batch * len(people) + person
        at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
        counts = (unit >= 0) & (people[person] == user_ids) & (keys[at] == wanted)
        column = unit - starts[np.maximum(batch, 0)]
        return np.where(counts, batch, -1), np.where(counts, slots[at], -1), np.where(counts, column, -1)


def _round_batches(
    project: Project, round: int, *, batch_id: int | None = None, summaries: bool = False
) -> _RoundBatches:
    _check_round(project, round)
    roster = _roster(project, round, batch_id)
    batches = _batches_in_round(project, roster)
    samples = _read_samples(project, batch_id=batch_id, summary=summaries)
    rank = {batch_id_: index for index, (batch_id_, _) in enumerate(batches)}
    batch_rank = np.array([rank.get(batch, -1) for batch in samples.batch.tolist()], dtype=np.int64)
    rows = np.flatnonzero(batch_rank >= 0)
    rows = rows[np.lexsort((samples.ids[rows], samples.position[rows], batch_rank[rows]))]
    sizes = np.bincount(batch_rank[rows], minlength=len(batches))
    starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    bounds = [(int(starts[index]), int(starts[index + 1])) for index in range(len(batches))]
    return _RoundBatches(roster=roster, batches=batches, units=rows, bounds=bounds, samples=samples)


def _batch_codes(found: _RoundBatches, spans: _Spans) -> tuple[list[agreement.BatchCodes], list[np.ndarray]]:
    """Each batch's agreement annotators x samples worst codes, and where a labelled span exists."""
    rosters = found.rosters
    sizes = [stop - start for start, stop in found.bounds]
    cells_per_batch = [len(people) * size for people, size in zip(rosters, sizes, strict=True)]
    cell_starts = np.concatenate(([0], np.cumsum(cells_per_batch, dtype=np.int64))).astype(np.int64)
    batch, slot, column = found.cells(spans.sample, spans.user)
    counted = batch >= 0
    sizes_array = np.array(sizes, dtype=np.int64)
    cell = cell_starts[batch[counted]] + slot[counted] * sizes_array[batch[counted]] + column[counted]
    codes = np.zeros(int(cell_starts[-1]), dtype=np.int8)
    np.maximum.at(codes, cell, spans.code[counted])
    labelled = np.zeros(len(codes), dtype=bool)
    labelled[cell] = True
    blocks, marks = [], []
    for index, ((_, name), people) in enumerate(zip(found.batches, rosters, strict=True)):
        start, stop = cell_starts[index], cell_starts[index + 1]
        shape = (len(people), sizes[index])
        blocks.append(agreement.BatchCodes(name, people, found.sample_keys(index), codes[start:stop].reshape(shape)))
        marks.append(labelled[start:stop].reshape(shape))
    return blocks, marks


def _coded_round(project: Project, round: int) -> agreement.CodedLabels:
    found = _round_batches(project, round)
    blocks, _ = _batch_codes(found, _read_spans(project, round))
    return agreement.code_labels(blocks)


def batch_labels(project: Project, round: int = 1) -> list[agreement.BatchLabels]:
    """Per batch with a submission in the round: its agreement roster, sample ids and worst labels.

    The roster is the annotators with a submitted assignment for the batch in
    that round, minus those an admin excluded from agreement. Only labels of
    roster members are kept; a roster member with no labelled span on a sample
    gave it C (BatchLabels' rule).
    """
    found = _round_batches(project, round)
    blocks, marks = _batch_codes(found, _read_spans(project, round))
    return [_as_labels(block, mark) for block, mark in zip(blocks, marks, strict=True)]


def _as_labels(block: agreement.BatchCodes, labelled: np.ndarray) -> agreement.BatchLabels:
    rows, columns = np.nonzero(labelled)
    labels = {
        (block.annotators[row], block.samples[column]): CATEGORIES[block.codes[row, column]]
        for row, column in zip(rows.tolist(), columns.tolist(), strict=True)
    }
    return agreement.BatchLabels(name=block.name, annotators=list(block.annotators), samples=list(block.samples),
                                 labels=labels)


def project_agreement(
    project: Project,
    scheme: str,
    level: str = "nominal",
    aggregate: str = "pooled",
    round: int = 1,
    *,
    bootstrap: int = 0,
    seed: int = 0,
) -> dict[str, Any]:
    """Alpha of the project's worst-pooled labels, as the agreement command prints it.

    With ``bootstrap`` > 0 (pooled only) adds ``interval``: a 95% percentile
    bootstrap interval, or None when alpha is undefined.
    """
    parsed = agreement.parse_scheme(scheme)  # bad arguments fail before any query
    agreement.check_level(level)
    agreement.check_aggregate(aggregate)
    if bootstrap and aggregate != "pooled":
        raise ValueError("a bootstrap interval is only computed for the pooled alpha")
    coded = _coded_round(project, round)
    intervals = agreement.bootstrap_intervals(coded, parsed, [level], samples=bootstrap, seed=seed) if bootstrap else {}
    return _agreement_report(coded, parsed, level, aggregate, round, bootstrap, intervals)


def _agreement_report(
    coded: agreement.CodedLabels,
    scheme: agreement.Scheme,
    level: str,
    aggregate: str,
    round: int,
    bootstrap: int = 0,
    intervals: dict[str, tuple[float, float] | None] | None = None,
) -> dict[str, Any]:
    report = agreement.compute_alpha(coded, scheme, level, aggregate).as_dict()
    report |= {"scheme": scheme.text, "level": level, "aggregate": aggregate, "round": round}
    if bootstrap:
        report["interval"] = (intervals or {}).get(level)
        report["bootstrap_resamples"] = agreement.bootstrap_resamples(report["units"], bootstrap)
    return report


def project_pairwise_alpha(
    project: Project, scheme: str, level: str = "nominal", round: int = 1, *, coded: agreement.CodedLabels | None = None
) -> list[dict]:
    parsed = agreement.parse_scheme(scheme)
    agreement.check_level(level)
    return agreement.pairwise_alpha(coded if coded is not None else _coded_round(project, round), parsed, level)


def batch_disputes(project: Project, batch: Batch, round: int, scheme: str = "C|B|Q|U") -> dict[str, Any]:
    """Samples of one batch on which the agreement annotators' worst labels differ under the scheme.

    A label the scheme drops is a missing value and cannot disagree; merged
    categories (C+B) agree with each other. Each disputed sample lists every
    annotator's worst label (C when they left no span). Reads only that batch's rows.
    """
    parsed = agreement.parse_scheme(scheme)
    found = _round_batches(project, round, batch_id=batch.pk)
    if not found.batches:
        return {"batch": batch.name, "round": round, "scheme": parsed.text, "annotators": [], "samples": 0,
                "disputed": [], "reason": f"nobody submitted batch {batch.name!r} in round {round}"}
    [block], _ = _batch_codes(found, _read_spans(project, round, batch_id=batch.pk))
    values = parsed.lookup()[block.codes]  # annotators x samples, -1 where the scheme drops the label
    disputed = []
    for column, sample_id in enumerate(block.samples):
        given = {int(value) for value in values[:, column]} - {-1}
        if len(given) > 1:
            labels = {name: CATEGORIES[block.codes[row, column]] for row, name in enumerate(block.annotators)}
            disputed.append({"sample_id": sample_id, "labels": labels})
    reason = "only one annotator counts for agreement" if len(block.annotators) < 2 else None
    return {"batch": batch.name, "round": round, "scheme": parsed.text, "annotators": list(block.annotators),
            "samples": len(block.samples), "disputed": disputed, "reason": reason}


# --------------------------------------------------------------------------- sample verdicts and results


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


def worst_label_distribution(project: Project, round: int = 1) -> dict[str, dict[str, int]]:
    """``{generator: {"n", "C", "B", "Q", "U"}}``: how many samples got each worst label (all submitters)."""
    return _distribution(_verdicts(project, round, _read_samples(project)))


def project_detector_eval(project: Project, threshold: float = 0.5, round: int = 1) -> dict[str, dict[str, Any]]:
    """Every numeric metadata key (but the generator's) evaluated against the worst human label."""
    samples = _read_samples(project, metadata=True)
    found = _verdicts(project, round, samples)
    outputs = results.classify_detector_outputs(samples.metadata)
    report = results.evaluate_detector_outputs(outputs, found.rows, found.categories, threshold)
    return report | _judge_detector_eval(project, samples, found, threshold)


def _judge_detector_eval(project: Project, samples: _Samples, found: _Verdicts, threshold: float) -> dict[str, Any]:
    """The project's judges (judging app) as detectors ``judge:<name>``: each one's latest judgement per sample.

    Evaluated by the same rules as the metadata detectors (a rubric judge's
    0/1 verdicts read as verdicts, an NLI judge's p against the threshold,
    failed or missing judgements invalid). They stay out of the challenging
    selection, which is FaithBench's choice of what to annotate.
    """
    from judging.services.detectors import judge_predictions  # judging builds on annotate, not the reverse

    predictions = judge_predictions(project)
    if not predictions:
        return {}
    outputs_by_row: list[dict[str, Any]] = [{} for _ in range(len(samples.ids))]
    for name, by_sample in predictions.items():
        rows = samples.index_of(np.fromiter(by_sample, dtype=np.int64, count=len(by_sample)))
        for row, value in zip(rows.tolist(), by_sample.values(), strict=True):
            if row >= 0:
                outputs_by_row[row][name] = value
    judged = results.classify_detector_outputs(outputs_by_row)
    return results.evaluate_detector_outputs(judged, found.rows, found.categories, threshold)


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
    if len(detectors) >= 2:
        hard = results.challenging_mask(outputs, detectors, rows, threshold)
        challenging = np.bincount(group_of.reshape(-1)[hard], minlength=len(passages))
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


# --------------------------------------------------------------------------- spans


def batch_spans(project: Project, round: int = 1) -> list[agreement.BatchSpans]:
    """Spans of each batch's agreement roster, for span F1 and token-level alpha."""
    found = _round_batches(project, round, summaries=True)
    return _batch_spans(found, _read_spans(project, round, offsets=True))


def _batch_spans(found: _RoundBatches, spans: _Spans) -> list[agreement.BatchSpans]:
    batch, slot, _ = found.cells(spans.sample, spans.user)
    rosters = found.rosters
    grouped: list[dict[tuple[str, int], list[agreement.Span]]] = [{} for _ in found.batches]
    counted = batch >= 0
    for index, slot_, sample_id, start, end, code in zip(
        batch[counted].tolist(), slot[counted].tolist(), spans.sample[counted].tolist(),
        spans.start[counted].tolist(), spans.end[counted].tolist(), spans.code[counted].tolist(), strict=True,
    ):
        grouped[index].setdefault((rosters[index][slot_], sample_id), []).append((start, end, CATEGORIES[code]))
    return [
        agreement.BatchSpans(name=name, annotators=people, summaries=found.summaries(index), spans=grouped[index])
        for index, ((_, name), people) in enumerate(zip(found.batches, rosters, strict=True))
    ]


def span_agreement(project: Project, scheme: str = "C|B|Q|U", round: int = 1) -> dict[str, Any]:
    """Pairwise span F1 (exact and overlap, overall and per label) and token-level alpha under the scheme."""
    parsed = agreement.parse_scheme(scheme)
    return _span_agreement(batch_spans(project, round), parsed, round)


def _span_agreement(batches: list[agreement.BatchSpans], scheme: agreement.Scheme, round: int) -> dict[str, Any]:
    pairs = agreement.pairwise_span_agreement(batches, agreement.SPAN_MODES)
    labels = sorted(
        {label for pair in pairs for mode in agreement.SPAN_MODES for label in pair[mode]["per_label"]},
        key=lambda label: -CATEGORIES.index(label) if label in CATEGORIES else 0,
    )
    token = agreement.token_alpha(batches, scheme).as_dict()
    return {"scheme": scheme.text, "round": round, "labels": labels, "pairs": pairs, "token_alpha": token}


# --------------------------------------------------------------------------- page figure sets


def results_figures(project: Project, round: int | None, threshold: float, k: int) -> dict[str, Any]:
    """Everything the results page shows, from one read of the samples and one of the round's spans.

    ``rates`` (halu_rates), ``distribution`` (worst_label_distribution) and
    ``detectors`` (detector_eval) when there is a round; ``selection``
    (challenging_groups) always.
    """
    samples = _read_samples(project, metadata=True, summary=True)
    outputs = results.classify_detector_outputs(samples.metadata)
    figures: dict[str, Any] = {"round": round, "selection": _challenging(project, samples, outputs, k, threshold)}
    if round is not None:
        found = _verdicts(project, round, samples)
        figures["rates"] = results.hallucination_rates(zip(found.generators, found.categories, strict=True))
        figures["distribution"] = _distribution(found)
        figures["detectors"] = results.evaluate_detector_outputs(outputs, found.rows, found.categories, threshold)
        figures["detectors"] |= _judge_detector_eval(project, samples, found, threshold)
    return figures


def agreement_figures(
    project: Project, schemes: Sequence[str], levels: Sequence[str], aggregate: str, rounds: Iterable[int],
    bootstrap: int = 0,
) -> dict[str, Any]:
    """Every (scheme, level, round) report of the agreement page, and the pairwise alphas of the first scheme and level.

    Each round's labels are read once. ``reports``: project_agreement objects
    (with an interval when pooled and ``bootstrap`` > 0); ``pairwise``:
    ``[{"round", "pairs"}]``.
    """
    parsed = [agreement.parse_scheme(scheme) for scheme in schemes]
    for level in levels:
        agreement.check_level(level)
    agreement.check_aggregate(aggregate)
    resamples = bootstrap if aggregate == "pooled" else 0
    reports, pairwise = [], []
    for round in rounds:
        coded = _coded_round(project, round)
        for scheme in parsed:
            # The levels of one scheme resample the same units with the same draws: drawn once.
            intervals = agreement.bootstrap_intervals(coded, scheme, levels, samples=resamples) if resamples else {}
            for level in levels:
                reports.append(_agreement_report(coded, scheme, level, aggregate, round, resamples, intervals))
        pairs = project_pairwise_alpha(project, schemes[0], levels[0], round, coded=coded)
        pairwise.append({"round": round, "pairs": pairs})
    return {"reports": reports, "pairwise": pairwise}


def span_figures(project: Project, scheme: str, rounds: Iterable[int], bootstrap: int = 0) -> dict[str, Any]:
    """The span agreement section: per round, span_agreement and the nominal pooled sample-level alpha.

    One read of each round's spans serves both (the sample labels are the spans' worst categories).
    """
    parsed = agreement.parse_scheme(scheme)
    figures = []
    for round in rounds:
        found = _round_batches(project, round, summaries=True)
        spans = _read_spans(project, round, offsets=True)
        coded = agreement.code_labels(_batch_codes(found, spans)[0])
        intervals = agreement.bootstrap_intervals(coded, parsed, ["nominal"], samples=bootstrap) if bootstrap else {}
        figures.append({
            "round": round,
            "spans": _span_agreement(_batch_spans(found, spans), parsed, round),
            "sample_alpha": _agreement_report(coded, parsed, "nominal", "pooled", round, bootstrap, intervals),
        })
    return {"rounds": figures}
