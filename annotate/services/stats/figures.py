"""Page figure sets: everything the results and agreement pages show, from one read of the rows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from annotate import agreement, results
from annotate.models import Project
from annotate.services.stats.agreement import (
    _agreement_report,
    _batch_codes,
    _coded_round,
    _round_batches,
    project_pairwise_alpha,
)
from annotate.services.stats.readers import _read_samples, _read_spans
from annotate.services.stats.spans import _batch_spans, _span_agreement
from annotate.services.stats.verdicts import _challenging, _distribution, _judge_detector_eval, _verdicts


def results_figures(
    project: Project, round: int | None, threshold: float, k: int, hallucinated: str = results.DEFAULT_TRUTH
) -> dict[str, Any]:
    """Everything the results page shows, from one read of the samples and one of the round's spans.

    ``rates`` (halu_rates), ``distribution`` (worst_label_distribution) and
    ``detectors`` (detector_eval, against the truth set ``hallucinated``) when there is a round; ``selection``
    (challenging_groups, which needs no truth) always.
    """
    truth = results.truth_set(hallucinated)
    samples = _read_samples(project, metadata=True, summary=True)
    outputs = results.classify_detector_outputs(samples.metadata)
    figures: dict[str, Any] = {"round": round, "selection": _challenging(project, samples, outputs, k, threshold)}
    if round is not None:
        found = _verdicts(project, round, samples)
        figures["rates"] = results.hallucination_rates(zip(found.generators, found.categories, strict=True))
        figures["distribution"] = _distribution(found)
        detectors = results.evaluate_detector_outputs(outputs, found.rows, found.categories, threshold, truth)
        judges = _judge_detector_eval(project, samples, found, threshold, truth)
        figures["detectors"] = results.by_detector_name(detectors | judges)
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
