"""Reading runs back: the `judge --json` summary of a run, and each judge's latest judgement of each sample."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from annotate.models import Project, Sample
from judging.costs import us_dollars
from judging.models import Judge, Judgement, JudgeRun
from judging.services.runs.figures import run_figures

# The order a person expects a run's judgements in, the same on every surface (the API, the run's page, the exports,
# `judge --json`), never the order the calls finished: the samples' order in the project (each batch's position,
# then each sample's position in its batch), a synthetic set's items by their sample in the same order, then type
# and percent; the judgement's id last. A run judges samples or synthetic items, never both, so the two never mix.
JUDGEMENT_ORDER = (
    "sample__batch__position", "sample__batch_id", "sample__position", "sample_id",
    "synthetic_item__sample__batch__position", "synthetic_item__sample__batch_id", "synthetic_item__sample__position",
    "synthetic_item__sample_id", "synthetic_item__type", "synthetic_item__percent", "synthetic_item_id", "id",
)


def sample_label(sample: Sample) -> str:
    """How the `judge --json` output names a sample: its external id (the id in the imported file), else its
    database id as text."""
    return sample.external_id or str(sample.pk)


def run_summary(run: JudgeRun, *, with_judgements: bool = True) -> dict[str, Any]:
    """The `judge --json` object: the run's figures and, with_judgements, one entry per judgement.

    An entry is the JSONL export's row of the judgement (judging.services.export.judgement_row: the same keys and
    values, so the two cannot drift: a blank reasoning, raw answer or error is null; latency, tokens and cost are
    what this run spent, an answer from the call cache null, null and 0 with the earlier call's figures in
    ``cached_call_*``; a cost not known, the judge having no prices, null), with the keys `judge --json` gave
    before it, kept for the scripts that read them: ``sample`` is the sample's external id (its database id as
    text when it has none; the export's is the external id as stored, under ``sample_external_id`` here too) and
    ``probability`` is ``p`` again. A synthetic item's judgement has ``synthetic_item`` instead of a sample.
    ``score`` and ``p`` are null unless ``status`` is ok (a failed judgement stores no number).
    Judgements come in JUDGEMENT_ORDER. The token and cost totals are the run
    page's (run_figures, usage_totals): null where unknown, with the reason in
    ``reasons``.
    """
    summary: dict[str, Any] = {
        "run": run.pk,
        "judge": run.judge.name,
        "mode": run.judge.mode,
        "status": run.status,
        "status_label": run.status_label,  # "Done: 15 of 15 failed" when no target got a score
        "error": run.error,
        "items": run.total,
        "scored": run.scored,
        "failed": run.failed,
        "calls": run.calls,
        "cached": run.cached,
        "flagged": run.flagged,
        # Times a worker stopped mid-run and the run was queued again: the requests in flight then are not in calls.
        "resumed": run.resumed,
        "seconds": None if run.seconds is None else round(run.seconds, 3),
        **run_figures(run)["usage"],
    }
    summary["cost"] = us_dollars(summary["cost"])  # JSON's precision for US$ (judging.costs)
    if with_judgements:
        # Imported here: the export module reads this one's JUDGEMENT_ORDER.
        from judging.services.export import JUDGEMENT_ROW_RELATED, judgement_row

        rows = Judgement.objects.filter(run=run).select_related(*JUDGEMENT_ROW_RELATED).order_by(*JUDGEMENT_ORDER)
        entries = []
        for judgement in rows.iterator(chunk_size=2000):
            entry = judgement_row(judgement)
            entry["probability"] = entry["p"]
            if judgement.sample is not None:
                entry["sample"] = sample_label(judgement.sample)
            else:
                entry["synthetic_item"] = judgement.synthetic_item_id
            entries.append(entry)
        summary["judgements"] = entries
    return summary


def latest_judgements(
    project: Project, judge: Judge | None = None, samples: QuerySet[Any] | None = None
) -> dict[int, dict[int, Judgement]]:
    """``{judge_id: {sample_id: judgement}}``: each judge's judgement of each sample from the most recent run that
    judged it (whatever its status), samples only. ``samples`` (a query of sample ids) narrows it to those samples
    in the database: a sample's latest judgement depends on its own judgements only."""
    rows = Judgement.objects.filter(run__project=project, sample__isnull=False).select_related("run")
    if judge is not None:
        rows = rows.filter(run__judge=judge)
    if samples is not None:
        rows = rows.filter(sample_id__in=samples)
    latest: dict[int, dict[int, Judgement]] = {}
    # Oldest run first: a later run's judgement of a sample replaces an earlier one.
    for judgement in rows.order_by("run__created_at", "run_id").iterator(chunk_size=2000):
        latest.setdefault(judgement.run.judge_id, {})[judgement.sample_id] = judgement
    return latest
