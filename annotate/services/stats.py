"""Agreement and results of a project, read from the database.

This module only gathers rows (a handful of queries, values_list, no per-row
ORM objects so that 100,000 samples stay quick) and hands plain values to
the pure modules annotate.agreement and annotate.results.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from annotate import agreement, results
from annotate.models import Assignment, Batch, Project, Sample, SpanAnnotation
from annotate.taxonomy import category_of, label_categories, worst_category

UNKNOWN_GENERATOR = "(unknown)"


@dataclass
class _Roster:
    """Who submitted each batch in a round, and who of them counts for agreement."""

    submitted: dict[int, list[str]] = field(default_factory=dict)  # batch id -> usernames
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


def _roster(project: Project, round: int) -> _Roster:
    roster = _Roster()
    rows = (
        Assignment.objects.filter(batch__project=project, round=round, status=Assignment.Status.SUBMITTED)
        .order_by("batch_id", "annotator__username")
        .values_list("batch_id", "annotator_id", "annotator__username", "excluded_from_agreement")
    )
    for batch_id, user_id, username, excluded in rows:
        roster.usernames[user_id] = username
        roster.submitted.setdefault(batch_id, []).append(username)
        people = roster.agreement.setdefault(batch_id, [])
        if not excluded:
            people.append(username)
    return roster


def _worst_by_annotator(project: Project, round: int, usernames: dict[int, str]) -> dict[tuple[str, int], str]:
    """(username, sample id) -> worst category over that annotator's spans; only pairs with a labelled span."""
    categories = label_categories(project.taxonomy or {})
    by_labels: dict[tuple[str, ...], str | None] = {}  # few distinct label lists: classify each once
    worst: dict[tuple[str, int], str] = {}
    spans = SpanAnnotation.objects.filter(sample__project=project, round=round).values_list(
        "sample_id", "annotator_id", "labels"
    )
    for sample_id, user_id, labels in spans.iterator(chunk_size=5000):
        username = usernames.get(user_id)
        if username is None or not isinstance(labels, list):
            continue  # not a submitter of this round, or a malformed row
        key = tuple(labels)
        if key not in by_labels:
            by_labels[key] = category_of(key, categories)
        category = by_labels[key]
        if category is None:
            continue  # empty label list: FaithBench ignores such spans
        pair = (username, sample_id)
        worst[pair] = worst_category((worst.get(pair), category))
    return worst


def _batches_in_round(project: Project, roster: _Roster) -> list[tuple[int, str]]:
    return [
        (batch_id, name)
        for batch_id, name in Batch.objects.filter(project=project).order_by("position", "id").values_list("id", "name")
        if batch_id in roster.submitted
    ]


def _samples_by_batch(project: Project, batch_ids: Iterable[int]) -> dict[int, list[int]]:
    wanted = set(batch_ids)
    samples: dict[int, list[int]] = defaultdict(list)
    rows = Sample.objects.filter(project=project).order_by("batch_id", "position", "id").values_list("id", "batch_id")
    for sample_id, batch_id in rows.iterator(chunk_size=10000):
        if batch_id in wanted:
            samples[batch_id].append(sample_id)
    return samples


def batch_labels(project: Project, round: int = 1) -> list[agreement.BatchLabels]:
    """Per batch with a submission in the round: its agreement roster, sample ids and worst labels.

    The roster is the annotators with a submitted assignment for the batch in
    that round, minus those an admin excluded from agreement. Only labels of
    roster members are kept; a roster member with no labelled span on a sample
    gave it C (BatchLabels' rule).
    """
    _check_round(project, round)
    roster = _roster(project, round)
    batches = _batches_in_round(project, roster)
    samples = _samples_by_batch(project, (batch_id for batch_id, _ in batches))
    worst = _worst_by_annotator(project, round, roster.usernames)
    labels_by_batch: dict[int, dict[tuple[str, Any], str]] = defaultdict(dict)
    batch_of_sample = {sample_id: batch_id for batch_id, ids in samples.items() for sample_id in ids}
    for (username, sample_id), category in worst.items():
        batch_id = batch_of_sample.get(sample_id)
        if batch_id is not None and username in roster.agreement[batch_id]:
            labels_by_batch[batch_id][(username, sample_id)] = category
    return [
        agreement.BatchLabels(
            name=name,
            annotators=list(roster.agreement[batch_id]),
            samples=list(samples.get(batch_id, [])),
            labels=labels_by_batch.get(batch_id, {}),
        )
        for batch_id, name in batches
    ]


@dataclass
class SampleVerdict:
    """A sample's worst label over all the annotators who submitted its batch."""

    sample_id: int
    batch_id: int
    passage_id: int
    generator: str
    category: str
    metadata: dict[str, Any]


def sample_worst_labels(project: Project, round: int = 1, *, with_metadata: bool = False) -> list[SampleVerdict]:
    """Worst category per sample over every submitter of its batch (admin exclusion is for agreement only).

    Samples of batches nobody submitted in the round are left out: they have no
    human label yet. ``metadata`` is filled only when asked (detector outputs).
    """
    _check_round(project, round)
    roster = _roster(project, round)
    worst = _worst_by_annotator(project, round, roster.usernames)
    worst_by_sample: dict[int, str] = {}
    for (_, sample_id), category in worst.items():
        worst_by_sample[sample_id] = worst_category((worst_by_sample.get(sample_id), category))
    fields = ["id", "batch_id", "passage_id", "generator"] + (["metadata"] if with_metadata else [])
    rows = Sample.objects.filter(project=project, batch_id__in=list(roster.submitted)).order_by(
        "batch_id", "position", "id"
    )
    verdicts = []
    for row in rows.values_list(*fields).iterator(chunk_size=10000):
        sample_id, batch_id, passage_id, generator = row[:4]
        metadata = row[4] if with_metadata and isinstance(row[4], dict) else {}
        verdicts.append(
            SampleVerdict(
                sample_id=sample_id,
                batch_id=batch_id,
                passage_id=passage_id,
                generator=generator or UNKNOWN_GENERATOR,
                category=worst_by_sample.get(sample_id, "C"),
                metadata=metadata,
            )
        )
    return verdicts


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
    batches = batch_labels(project, round)
    report = agreement.compute_alpha(batches, parsed, level, aggregate).as_dict()
    report |= {"scheme": parsed.text, "level": level, "aggregate": aggregate, "round": round}
    if bootstrap:
        if aggregate != "pooled":
            raise ValueError("a bootstrap interval is only computed for the pooled alpha")
        report["interval"] = agreement.bootstrap_interval(batches, parsed, level, samples=bootstrap, seed=seed)
        report["bootstrap_resamples"] = agreement.bootstrap_resamples(report["units"], bootstrap)
    return report


def project_pairwise_alpha(project: Project, scheme: str, level: str = "nominal", round: int = 1) -> list[dict]:
    parsed = agreement.parse_scheme(scheme)
    agreement.check_level(level)
    return agreement.pairwise_alpha(batch_labels(project, round), parsed, level)


def project_halu_rates(project: Project, round: int = 1) -> dict[str, dict[str, Any]]:
    verdicts = sample_worst_labels(project, round)
    return results.hallucination_rates((verdict.generator, verdict.category) for verdict in verdicts)


def project_detector_eval(project: Project, threshold: float = 0.5, round: int = 1) -> dict[str, dict[str, Any]]:
    """Every numeric metadata key (but the generator's) evaluated against the worst human label."""
    verdicts = sample_worst_labels(project, round, with_metadata=True)
    detectors = results.detector_keys(verdict.metadata for verdict in verdicts)
    predictions = {
        detector: {verdict.sample_id: verdict.metadata.get(detector) for verdict in verdicts} for detector in detectors
    }
    truths = {verdict.sample_id: verdict.category for verdict in verdicts}
    return results.evaluate_detectors(predictions, truths, threshold)


def batch_spans(project: Project, round: int = 1) -> list[agreement.BatchSpans]:
    """Spans of each batch's agreement roster, for span F1 and token-level alpha."""
    _check_round(project, round)
    roster = _roster(project, round)
    batches = _batches_in_round(project, roster)
    categories = label_categories(project.taxonomy or {})
    summaries: dict[int, dict[int, str]] = defaultdict(dict)
    batch_of_sample: dict[int, int] = {}
    rows = Sample.objects.filter(project=project, batch_id__in=list(roster.submitted)).order_by(
        "batch_id", "position", "id"
    )
    for sample_id, batch_id, summary in rows.values_list("id", "batch_id", "summary").iterator(chunk_size=5000):
        summaries[batch_id][sample_id] = summary
        batch_of_sample[sample_id] = batch_id
    spans: dict[int, dict[tuple[str, int], list[agreement.Span]]] = defaultdict(lambda: defaultdict(list))
    rows_spans = SpanAnnotation.objects.filter(sample__project=project, round=round).values_list(
        "sample_id", "annotator_id", "start", "end", "labels"
    )
    for sample_id, user_id, start, end, labels in rows_spans.iterator(chunk_size=5000):
        username = roster.usernames.get(user_id)
        batch_id = batch_of_sample.get(sample_id)
        if username is None or batch_id is None or username not in roster.agreement[batch_id]:
            continue
        category = category_of(labels if isinstance(labels, list) else [], categories)
        if category is not None:
            spans[batch_id][(username, sample_id)].append((start, end, category))
    return [
        agreement.BatchSpans(
            name=name,
            annotators=list(roster.agreement[batch_id]),
            summaries=summaries.get(batch_id, {}),
            spans={pair: list(found) for pair, found in spans[batch_id].items()},
        )
        for batch_id, name in batches
    ]
