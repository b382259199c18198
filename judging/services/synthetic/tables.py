"""What a synthetic set holds (its summary) and the paper's tables over the judges' latest runs on it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from judging import synthetic as nesting
from judging.models import Judgement, JudgeRun, SyntheticItem, SyntheticRewrite, SyntheticSet
from judging.services.synthetic.sets import sample_key
from judging.tables import cost_table, residual_table, sensitivity_table


def synthetic_summary(synthetic_set: SyntheticSet, *, failures_shown: int = 20) -> dict[str, Any]:
    """What the set holds, for the page and `synthetic_set --json`: outputs, rewrites, items, what is missing."""
    synthetic_set.refresh_from_db()
    rewrites = Counter(synthetic_set.rewrites.values_list("status", flat=True))
    items = Counter(synthetic_set.items.values_list("type", flat=True))
    outputs = items.get(SyntheticItem.Type.GOLD, 0)
    typed_outputs = Counter(
        synthetic_set.items.exclude(type=SyntheticItem.Type.GOLD).filter(percent=100).values_list("type", flat=True))
    failures = [
        {"sample": sample_key(rewrite.sample), "sentence": rewrite.sentence_index, "type": rewrite.type,
         "error": rewrite.error, "raw": rewrite.raw}
        for rewrite in synthetic_set.rewrites.filter(status=SyntheticRewrite.Status.ERROR)
        .select_related("sample")[:failures_shown]
    ]
    # A cancelled set (stored as failed) was stopped, not finished: what it lacks is not a failed rewrite.
    cancelled = synthetic_set.cancelled
    finished = synthetic_set.status in (SyntheticSet.Status.DONE, SyntheticSet.Status.FAILED) and not cancelled
    return {
        "set": synthetic_set.pk,
        "name": synthetic_set.name,
        "status": synthetic_set.status,
        "status_label": synthetic_set.status_label,  # "Cancelled" for a cancelled set (stored as failed)
        # Who cancelled it (null once that user is deleted) and when; both null unless cancelled.
        "cancelled_by": synthetic_set.cancelled_by.get_username() if cancelled and synthetic_set.cancelled_by else None,
        "cancelled_at": synthetic_set.cancelled_at.isoformat() if cancelled else None,
        "seed": synthetic_set.seed,
        "sentences_per_output": synthetic_set.sentences_per_output,
        "writer": synthetic_set.writer.name if synthetic_set.writer else None,
        "prompts": {kind: (prompt.number if prompt else None) for kind, prompt in (
            ("intrinsic", synthetic_set.intrinsic_prompt), ("extrinsic", synthetic_set.extrinsic_prompt))},
        "outputs": outputs,
        "rewrites": {"needed": synthetic_set.total, "ok": rewrites.get("ok", 0), "error": rewrites.get("error", 0)},
        "items": {kind: items.get(kind, 0) for kind in SyntheticItem.Type.values},
        # Outputs whose items of a type were not built because a rewrite failed (or, imported, is missing).
        "not_built": {kind: (outputs - typed_outputs.get(kind, 0)) if finished else None
                      for kind in nesting.HALLUCINATION_TYPES},
        "failed_rewrites": failures,
        "notes": [line for line in synthetic_set.error.splitlines() if line],
    }


def latest_runs(synthetic_set: SyntheticSet) -> list[JudgeRun]:
    """Each judge's most recent run over the set (any status: a run in progress shows what it has so far)."""
    latest: dict[int, JudgeRun] = {}
    for run in synthetic_set.runs.select_related("judge", "cancelled_by").order_by("-created_at", "-id"):
        latest.setdefault(run.judge_id, run)
    return sorted(latest.values(), key=lambda run: run.judge.name)


def table_rows(runs: Iterable[JudgeRun]) -> list[dict[str, Any]]:
    """One plain row per judgement of a synthetic item, as judging.tables reads them."""
    rows = []
    judgements = (Judgement.objects.filter(run__in=list(runs), synthetic_item__isnull=False)
                  .select_related("run__judge", "synthetic_item").order_by("run__judge__name", "id"))
    for judgement in judgements:
        item = judgement.synthetic_item
        judge = judgement.run.judge
        ok = judgement.status == Judgement.Status.OK
        rows.append({
            "judge": judge.name, "mode": judge.mode, "type": item.type, "percent": item.percent,
            "expected": item.expected_score, "score": judgement.display_score if ok else None,
            "latency": judgement.latency_seconds, "output_tokens": judgement.output_tokens,
            # A call sent while the judge had no prices has no known cost (Judgement.cost_unpriced), never 0.
            "cost": None if judgement.cost_unpriced else judgement.cost, "unpriced": judgement.cost_unpriced,
            "sample": item.sample_id, "cached": judgement.cached, "status": judgement.status,
        })
    return rows


def paper_tables(synthetic_set: SyntheticSet) -> dict[str, Any]:
    """The residual, sensitivity and cost tables of the judges' latest runs over the set."""
    runs = latest_runs(synthetic_set)
    rows = table_rows(runs)
    return {
        "residual": residual_table(rows),
        "sensitivity": sensitivity_table(rows, sentences_per_output=synthetic_set.sentences_per_output),
        "cost": cost_table(rows),
        "runs": [{"run": run.pk, "judge": run.judge.name, "mode": run.judge.mode, "status": run.status,
                  # A cancelled run is stored as failed: these say so, as the run's own API does.
                  "status_label": run.status_label,
                  "cancelled_by": run.cancelled_by.get_username() if run.cancelled_by is not None else None,
                  "cancelled_at": run.cancelled_at,
                  "judged": run.done, "total": run.total} for run in runs],
    }
