"""Reading runs back: the `judge --json` summary of a run, and each judge's latest judgement of each sample."""

from __future__ import annotations

from typing import Any

from annotate.models import Project, Sample
from judging.costs import us_dollars
from judging.models import Judge, Judgement, JudgeRun
from judging.services.runs.figures import run_figures
from judging.services.runs.results import OK

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

    ``sample`` is the sample's external id (its database id as text when it has
    none), ``sample_id`` its database id (the API's ``sample``) and
    ``sample_external_id`` its external id as stored ("" when none), the names
    the API and the exports use too; ``score`` is null unless ``status`` is
    ok; ``raw`` is the endpoint's last answer ("" for an endpoint error).
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
        rows = (
            Judgement.objects.filter(run=run)
            .select_related("sample", "sample__batch")
            .order_by(*JUDGEMENT_ORDER)
        )
        entries = []
        for judgement in rows.iterator(chunk_size=2000):
            entry: dict[str, Any] = {}
            if judgement.sample is not None:
                entry |= {"sample": sample_label(judgement.sample), "sample_id": judgement.sample_id,
                          "sample_external_id": judgement.sample.external_id, "batch": judgement.sample.batch.name}
            else:
                entry |= {"sample": None, "synthetic_item": judgement.synthetic_item_id}
            ok = judgement.status == OK
            entry |= {
                "score": judgement.score if ok else None,
                "probability": judgement.probability if ok else None,
                "reasoning": judgement.reasoning,
                "status": judgement.status,
                "raw": judgement.raw,
                "error": judgement.error,
                "cached": judgement.cached,
            }
            entries.append(entry)
        summary["judgements"] = entries
    return summary


def latest_judgements(project: Project, judge: Judge | None = None) -> dict[int, dict[int, Judgement]]:
    """``{judge_id: {sample_id: judgement}}``: each judge's judgement of each sample from the most recent run that
    judged it (whatever its status), samples only."""
    rows = Judgement.objects.filter(run__project=project, sample__isnull=False).select_related("run")
    if judge is not None:
        rows = rows.filter(run__judge=judge)
    latest: dict[int, dict[int, Judgement]] = {}
    # Oldest run first: a later run's judgement of a sample replaces an earlier one.
    for judgement in rows.order_by("run__created_at", "run_id").iterator(chunk_size=2000):
        latest.setdefault(judgement.run.judge_id, {})[judgement.sample_id] = judgement
    return latest
