"""What a run judges: its targets (samples, or a synthetic set's items), read a chunk at a time, skipping those
it has already judged; and whether any of their requests misses the call cache."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from annotate.models import Sample
from judging.judges.rubric import STATUS_OK, RubricOutcome, outcome_from_raw
from judging.models import AuditItem, CallCache, Judgement, JudgeRun, SyntheticItem
from judging.services.triage import explain_targets

CHUNK = 200  # targets read (and requests built) at a time



@dataclass(frozen=True)
class Target:
    """One thing to judge: a sample, or a synthetic item (its text against its sample's source)."""

    sample_id: int | None
    synthetic_item_id: int | None
    hypothesis: str
    reference: str
    sentences: list[list[int]] | None = None

    def judgement(self, run: JudgeRun, **fields: Any) -> Judgement:
        return Judgement(run=run, sample_id=self.sample_id, synthetic_item_id=self.synthetic_item_id, **fields)


def target_queryset(run: JudgeRun) -> QuerySet:
    """The run's targets: samples, or a synthetic set's items.

    A flagged run judges the samples in the audit queue; a triage's explain run only those its own first pass
    flagged (the queue also holds other runs' and imports' flags).
    """
    if run.scope == JudgeRun.Scope.SYNTHETIC:
        return SyntheticItem.objects.filter(synthetic_set_id=run.synthetic_set_id)
    samples = Sample.objects.filter(project_id=run.project_id)
    if run.batch_id is not None:
        samples = samples.filter(batch_id=run.batch_id)
    if run.scope == JudgeRun.Scope.FLAGGED and run.purpose == JudgeRun.Purpose.EXPLAIN:
        samples = samples.filter(pk__in=explain_targets(run))
    elif run.scope == JudgeRun.Scope.FLAGGED:
        samples = samples.filter(pk__in=AuditItem.objects.filter(project_id=run.project_id).values("sample_id"))
    return samples


def _pending_chunks(run: JudgeRun, size: int) -> Iterator[list[Target]]:
    """The targets this run has not judged yet, `size` at a time, in id order (read a chunk at a time)."""
    synthetic = run.scope == JudgeRun.Scope.SYNTHETIC
    pending = target_queryset(run)
    if run.pk is not None:  # an unsaved run (needs_endpoint) has judged nothing
        judged = Judgement.objects.filter(run=run)
        if synthetic:
            pending = pending.exclude(pk__in=judged.filter(synthetic_item__isnull=False).values("synthetic_item_id"))
        else:
            pending = pending.exclude(pk__in=judged.filter(sample__isnull=False).values("sample_id"))
    if synthetic:
        pending = pending.values_list("pk", "text", "sample__passage__text")
    else:
        pending = pending.values_list("pk", "summary", "passage__text", "sentences")
    last = 0
    while True:
        rows = list(pending.filter(pk__gt=last).order_by("pk")[:size])
        if not rows:
            return
        last = rows[-1][0]
        if synthetic:
            yield [Target(None, pk, text, reference) for pk, text, reference in rows]
        else:
            yield [Target(pk, None, summary, reference, sentences) for pk, summary, reference, sentences in rows]



def _served_from_cache(
    keys: set[str], *, with_reasoning: bool, ask_again: bool = False, asked: frozenset[str] | set[str] = frozenset(),
    since: datetime | None = None,
) -> dict[str, tuple[CallCache, RubricOutcome]]:
    """The cached answers among `keys` that answer a call instead of the endpoint, each read with today's parser.

    Every answer the endpoint gave is served, a parse error too: an identical
    call is not paid twice (DESIGN.md, "Runs"), and a row that today's parser
    reads differently gives today's reading. With `ask_again` (a run's choice),
    an answer that does not parse as a score is a miss instead: the call is
    made again and its answer replaces the row. One run asks a call once: keys
    in `asked`, which this execution has already sent, and answers that came
    at or after `since` (the run's first start: an earlier execution of the
    same run, stopped by a killed worker or its time limit, asked them) are
    served whatever they say.
    """
    served: dict[str, tuple[CallCache, RubricOutcome]] = {}
    for row in CallCache.objects.filter(key__in=keys):
        outcome = outcome_from_raw(row.raw, with_reasoning=with_reasoning, request_mode=row.request_mode,
                                   input_tokens=row.input_tokens, output_tokens=row.output_tokens)
        asked_in_this_run = row.key in asked or (since is not None and row.created_at >= since)
        if outcome.status == STATUS_OK or not ask_again or asked_in_this_run:
            served[row.key] = (row, outcome)
    return served


def _any_cache_miss(run: JudgeRun, request_for: Any) -> bool:
    """Whether some pending target's request would go to the endpoint (with the run's ask_again choice)."""
    for chunk in _pending_chunks(run, CHUNK):
        keys = {request_for(target).cache_key for target in chunk}
        served = _served_from_cache(keys, with_reasoning=run.judge.with_reasoning, ask_again=run.ask_again,
                                    since=run.started_at)
        if len(served) < len(keys):
            return True
    return False
