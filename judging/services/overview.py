"""What the judges and run pages show, read from the database (no writes here)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, QuerySet

from annotate.models import Project, Sample
from judging.clients.chat.allowed import key_allowed
from judging.clients.nli import ModelSettingError, consistent_class
from judging.models import Judge, Judgement, JudgeRun, SyntheticSet
from judging.services.runs.figures import run_figures as run_figures  # the run page's; the run summaries read it too
from judging.services.runs.summary import JUDGEMENT_ORDER
from judging.services.runs.targets import target_queryset

RECENT_RUNS = 10


@dataclass(frozen=True)
class JudgeRow:
    judge: Judge
    # The API-key variable is set in this server's environment (its value is never read out); None when the variable
    # is not one FAITHLAB_JUDGE_KEYS allows for the judge's host: whether it is set is then not told (nor read).
    key_set: bool | None
    runs: int
    # NLI judges: the class read as P(consistent) ("1 (consistent)"), or why it cannot be told (nli_consistency).
    consistent_class: str = ""
    consistent_problem: str = ""


def api_key_is_set(variable: str, base_url: str) -> bool | None:
    """Whether the named environment variable holds something; the value itself never leaves this function. None
    for a variable not allowed for ``base_url`` (FAITHLAB_JUDGE_KEYS): the page must not tell which variables exist."""
    if variable and not key_allowed(variable, base_url):
        return None
    return bool(variable) and bool(os.environ.get(variable))


def nli_consistency(judge: Judge) -> tuple[str, str]:
    """An NLI judge's consistent class as its pages show it, and "" (or "", and why it cannot be told: a run of
    the judge is then refused with the same words). Read from the model's config.json: nothing is loaded."""
    try:
        return consistent_class(judge.nli_model_path, judge.nli_consistent_label), ""
    except ModelSettingError as error:
        return "", str(error)


def judge_rows(project: Project) -> list[JudgeRow]:
    judges = Judge.objects.filter(project=project).annotate(run_count=Count("runs")).order_by("name")
    rows = []
    for judge in judges:
        chosen, problem = nli_consistency(judge) if judge.kind == Judge.Kind.NLI else ("", "")
        rows.append(JudgeRow(judge=judge, key_set=api_key_is_set(judge.api_key_env, judge.base_url),
                             runs=judge.run_count, consistent_class=chosen, consistent_problem=problem))
    return rows


def nli_run_figures(run: JudgeRun) -> dict[str, Any]:
    """What an NLI run's page shows beside its counts: the windows its model scored (each scored judgement keeps
    its windows' p in ``raw``, and how many windows its sentences took: runs.nli_scoring.nli_raw), in all and per
    sample, and the judge's model and consistent class (its settings now)."""
    outputs = sentences = samples = 0
    for raw in run.judgements.filter(status=Judgement.Status.OK).values_list("raw", flat=True).iterator():
        try:
            found = json.loads(raw) if raw else None
        except ValueError:
            found = None
        if not isinstance(found, dict) or not isinstance(found.get("windows"), list):
            continue  # judged before the windows were kept
        samples += 1
        outputs += len(found["windows"])
        sentences += int(found.get("sentence_windows") or 0)
    chosen, problem = nli_consistency(run.judge)
    return {
        "window_samples": samples,
        "output_windows": outputs,
        "sentence_windows": sentences,
        "windows": outputs + sentences,
        "windows_per_sample": (outputs + sentences) / samples if samples else None,
        "model_path": run.judge.nli_model_path,
        "consistent_class": chosen,
        "consistent_problem": problem,
    }


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
