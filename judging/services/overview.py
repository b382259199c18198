"""What the judges and run pages show, read from the database (no writes here)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from django.db.models import Count, QuerySet

from annotate.models import Project, Sample
from judging.models import Judge, Judgement, JudgeRun, SyntheticSet
from judging.services.runs.figures import run_figures as run_figures  # the run page's; the run summaries read it too
from judging.services.runs.summary import JUDGEMENT_ORDER
from judging.services.runs.targets import target_queryset

RECENT_RUNS = 10


@dataclass(frozen=True)
class JudgeRow:
    judge: Judge
    key_set: bool  # the API-key variable is set in this server's environment (its value is never read out)
    runs: int


def api_key_is_set(variable: str) -> bool:
    """Whether the named environment variable holds something; the value itself never leaves this function."""
    return bool(variable) and bool(os.environ.get(variable))


def judge_rows(project: Project) -> list[JudgeRow]:
    judges = Judge.objects.filter(project=project).annotate(run_count=Count("runs")).order_by("name")
    return [JudgeRow(judge=judge, key_set=api_key_is_set(judge.api_key_env), runs=judge.run_count) for judge in judges]


@dataclass(frozen=True)
class ScopeSizes:
    """How many samples each choice of the run and triage forms covers, as a run started now counts its targets."""

    every: int
    flagged: int
    batches: dict[int, int]


def scope_sizes(project: Project) -> ScopeSizes:
    """The samples of the project, of its audit queue, and of each batch (the targets a run would judge)."""
    def count(scope: str) -> int:
        return target_queryset(JudgeRun(project=project, scope=scope)).count()

    per_batch = Sample.objects.filter(project=project).values("batch_id").annotate(samples=Count("id"))
    return ScopeSizes(every=count(JudgeRun.Scope.ALL), flagged=count(JudgeRun.Scope.FLAGGED),
                      batches={row["batch_id"]: row["samples"] for row in per_batch})


def synthetic_run_size(synthetic_set: SyntheticSet) -> int:
    """How many items a run over the synthetic set would judge (every item of the set, as start_run counts)."""
    return target_queryset(JudgeRun(project_id=synthetic_set.project_id, scope=JudgeRun.Scope.SYNTHETIC,
                                    synthetic_set=synthetic_set)).count()


def recent_runs(project: Project, limit: int = RECENT_RUNS) -> list[JudgeRun]:
    return list(
        JudgeRun.objects.filter(project=project)
        .select_related("judge", "batch", "rubric", "cancelled_by")
        .order_by("-created_at", "-id")[:limit]
    )


def run_judgements(run: JudgeRun, status: str = "") -> QuerySet[Judgement]:
    """The run's judgements in the samples' order (JUDGEMENT_ORDER, as the API and the exports list them), of one
    status when asked."""
    rows = run.judgements.select_related("sample").order_by(*JUDGEMENT_ORDER)
    if status:
        rows = rows.filter(status=status)
    return rows
