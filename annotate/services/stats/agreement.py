"""Agreement rosters and labels: a round's batches as units, their worst codes, alpha and disputes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from annotate import agreement
from annotate.agreement import CATEGORIES
from annotate.models import Batch, Project
from annotate.services.stats.readers import _read_samples, _read_spans, _Samples, _Spans
from annotate.services.stats.rosters import _batches_in_round, _check_round, _Roster, _roster


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
