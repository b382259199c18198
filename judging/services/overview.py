"""What the judges and run pages show, read from the database (no writes here)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from django.db.models import Avg, Count, Q, QuerySet, Sum

from annotate.models import Project, Sample
from judging.models import Judge, Judgement, JudgeRun, SyntheticSet
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
        JudgeRun.objects.filter(project=project).select_related("judge", "batch", "rubric").order_by("-created_at", "-id")[
            :limit
        ]
    )


def run_figures(run: JudgeRun) -> dict[str, Any]:
    """A run's counts from its judgements (what is stored, not what the progress row says), with its cost.

    Cost, ``mean_latency`` and the ``sent_*`` token sums are over the calls
    actually sent: tokens x the judge's prices = cost, as each call was priced.
    Answers from the call cache (``cached_*`` tokens) were paid by an earlier
    call and took no endpoint time, so they are shown apart, never added in:
    the tokens the cache saved, over ``cached_usage`` answers (those whose
    earlier call reported its usage; ``cached`` counts them all). The rule of
    the run's rows (Judgement.run_*, the API's and the exports' latency, tokens
    and cost) is the same, so the rows add up to these figures.
    ``mean_latency`` is each call's whole time, retries and their waits included,
    over the calls that answered and those that ended as endpoint errors (the run
    waited for both). ``answered_calls`` are the calls sent that came back with an
    answer; ``usage_calls`` of them reported their token usage and
    ``no_usage_calls`` did not: when both are above 0 the cost and tokens are a
    partial total, and the page says of how many calls.
    """
    status = Judgement.Status
    sent, from_cache = Q(cached=False), Q(cached=True)
    answered = Q(status__in=[status.OK, status.PARSE_ERROR])
    found = run.judgements.aggregate(
        judged=Count("id"),
        scored=Count("id", filter=Q(status=status.OK)),
        parse_errors=Count("id", filter=Q(status=status.PARSE_ERROR)),
        errors=Count("id", filter=Q(status=status.ERROR)),
        from_cache=Count("id", filter=from_cache),  # not "cached": the filter names that field
        sent_calls=Count("id", filter=sent),
        answered_calls=Count("id", filter=sent & answered),
        usage_calls=Count("id", filter=sent & answered & Q(input_tokens__isnull=False, output_tokens__isnull=False)),
        retried=Count("id", filter=sent & Q(attempts__gt=1)),
        cost=Sum("cost", filter=sent),
        mean_latency=Avg("latency_seconds", filter=sent),
        latency_calls=Count("id", filter=sent & Q(latency_seconds__isnull=False)),
        sent_input_tokens=Sum("input_tokens", filter=sent),
        sent_output_tokens=Sum("output_tokens", filter=sent),
        cached_input_tokens=Sum("input_tokens", filter=from_cache),
        cached_output_tokens=Sum("output_tokens", filter=from_cache),
        cached_usage=Count("id", filter=from_cache & Q(input_tokens__isnull=False, output_tokens__isnull=False)),
    )
    found["cached"] = found.pop("from_cache")
    found["cached_no_usage"] = found["cached"] - found["cached_usage"]
    found["no_usage_calls"] = found["answered_calls"] - found["usage_calls"]
    found["partial_usage"] = bool(found["usage_calls"] and found["no_usage_calls"])
    # A sum over no judgement is None ("not reported"); in a run with judgements but no call sent (a fully cached
    # re-run) or none from the cache, that group's tokens and cost are a true 0.
    for group, count in (("sent", found.pop("sent_calls")), ("cached", found["cached"])):
        if found["judged"] and count == 0:
            found[f"{group}_input_tokens"] = found[f"{group}_output_tokens"] = 0
            if group == "sent":
                found["cost"] = 0.0
    return {
        "items": run.total,
        **found,
        "calls": run.calls,
        "seconds": run.seconds,
        "rubric_version": run.rubric.number if run.rubric_id else None,
    }


def run_judgements(run: JudgeRun, status: str = "") -> QuerySet[Judgement]:
    """The run's judgements in the samples' order (JUDGEMENT_ORDER, as the API and the exports list them), of one
    status when asked."""
    rows = run.judgements.select_related("sample").order_by(*JUDGEMENT_ORDER)
    if status:
        rows = rows.filter(status=status)
    return rows
