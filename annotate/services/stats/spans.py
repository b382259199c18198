"""Spans: each batch's spans for span F1 and token-level alpha."""

from __future__ import annotations

from typing import Any

from annotate import agreement
from annotate.agreement import CATEGORIES
from annotate.models import Project
from annotate.services.stats.agreement import _round_batches, _RoundBatches
from annotate.services.stats.readers import _read_spans, _Spans


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
