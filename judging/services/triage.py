"""Triage, the paper's recommendation: a fast first pass flags outputs, a judge with reasoning explains the flagged
ones, and the flagged outputs go to the audit queue (DESIGN.md, "Triage").

Thresholds are the project's (JudgingSettings): an LLM score <= llm_flag_at_most
(3 by default) or an NLI p < nli_flag_below (0.5) flags. A judgement that is not
ok (a parse error, an endpoint error) never flags: it has no number, and the run
lists it as failed instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from annotate.models import Batch, Project
from judging.models import AuditItem, Judge, Judgement, JudgeRun, JudgingSettings
from judging.services.judges import JudgeSettingsError, judging_settings


def is_flagged(judgement: Judgement, settings: JudgingSettings) -> bool:
    """Whether a judgement sends its sample to the audit queue under the project's thresholds."""
    if judgement.status != Judgement.Status.OK:
        return False
    if judgement.score is not None:
        return judgement.score <= settings.llm_flag_at_most
    if judgement.probability is not None:
        return judgement.probability < settings.nli_flag_below
    return False


def flag_reason(judgement: Judgement, settings: JudgingSettings, judge: Judge, run: JudgeRun) -> str:
    """Why a sample is in the audit queue, as the queue shows it."""
    if judgement.score is not None:
        rule = f"score {judgement.score} <= {settings.llm_flag_at_most}"
    else:
        rule = f"p {judgement.probability:.3f} < {settings.nli_flag_below:g}"
    return f"{rule} from judge {judge.name} (run {run.pk})"[:300]


def _flagged_judgements(run: JudgeRun, settings: JudgingSettings) -> list[Judgement]:
    """The run's judgements that flag their sample under the project's thresholds."""
    return [
        judgement
        for judgement in Judgement.objects.filter(run=run, sample__isnull=False, status=Judgement.Status.OK)
        if is_flagged(judgement, settings)
    ]


def _queue(run: JudgeRun, flagged: list[Judgement], settings: JudgingSettings) -> int:
    """Put the flagged judgements' samples into the audit queue (a sample already there stays as it is) and store
    their number as run.flagged."""
    judge = run.judge
    with transaction.atomic():
        AuditItem.objects.bulk_create(
            [
                AuditItem(project_id=run.project_id, sample_id=judgement.sample_id, flagged_by=judgement,
                          reason=flag_reason(judgement, settings, judge, run))
                for judgement in flagged
            ],
            ignore_conflicts=True,
        )
        JudgeRun.objects.filter(pk=run.pk).update(flagged=len(flagged))
    run.flagged = len(flagged)
    return len(flagged)


def flag_from_run(run: JudgeRun) -> int:
    """Put the samples the run flags into the project's audit queue; the number of samples it flags.

    A sample already in the queue stays as it is (one item per sample), and is
    counted: it is one of this run's flags. The count is stored as run.flagged.
    """
    settings = judging_settings(run.project)
    return _queue(run, _flagged_judgements(run, settings), settings)


@dataclass(frozen=True)
class FlaggedByRuns:
    """What flagging several runs of one project together put in its audit queue.

    Each run keeps its own count (run.flagged), but two runs that flag one
    sample give it one audit item: ``samples`` counts each sample once, and
    ``already_queued`` those of them that were in the queue before.
    """

    samples: frozenset[int]  # ids of the samples any of the runs flags
    already_queued: frozenset[int]  # of them, the ones with an audit item before these runs flagged

    @property
    def new(self) -> int:
        return len(self.samples - self.already_queued)


def flag_from_runs(runs: Sequence[JudgeRun]) -> FlaggedByRuns:
    """flag_from_run on each run of one project, and the distinct samples they sent to the audit queue."""
    if not runs:
        return FlaggedByRuns(samples=frozenset(), already_queued=frozenset())
    project = runs[0].project
    settings = judging_settings(project)
    flagged = {run.pk: _flagged_judgements(run, settings) for run in runs}
    samples = frozenset(judgement.sample_id for judgements in flagged.values() for judgement in judgements)
    # A subquery, not a list of ids: a big import may flag more samples than a query may carry as parameters.
    judged = Judgement.objects.filter(run__in=[run.pk for run in runs]).values("sample_id")
    queued = AuditItem.objects.filter(project=project, sample_id__in=judged).values_list("sample_id", flat=True)
    already_queued = samples & frozenset(queued)
    with transaction.atomic():
        for run in runs:
            _queue(run, flagged[run.pk], settings)
    return FlaggedByRuns(samples=samples, already_queued=already_queued)


def start_triage(project: Project, *, batch: Batch | None = None, by: Any = None, queue: bool = True) -> JudgeRun:
    """Start the project's first pass over all its samples or one batch; when it is done it flags, and the
    explainer (if the settings name one) runs on the flagged samples."""
    from judging.services.runs import start_run

    settings = judging_settings(project)
    if settings.first_pass is None:
        raise JudgeSettingsError(
            "first_pass", "the project has no first-pass judge: choose one in its judging settings first."
        )
    if settings.first_pass.kind == Judge.Kind.IMPORTED:
        raise JudgeSettingsError(
            "first_pass",
            f"the first-pass judge {settings.first_pass.name!r} holds imported outputs and cannot run: import new "
            "outputs with import_judgements --flag, or choose a rubric or NLI judge as the first pass.",
        )
    scope = JudgeRun.Scope.BATCH if batch is not None else JudgeRun.Scope.ALL
    return start_run(project, settings.first_pass, scope=scope, batch=batch, purpose=JudgeRun.Purpose.FIRST_PASS,
                     by=by, queue=queue)


def start_explanation(first_pass: JudgeRun, *, queue: bool = True) -> JudgeRun | None:
    """The explainer's run over the flagged samples in the first pass's scope (its batch, if any); None when the
    settings name no explainer, the explainer is the first-pass judge itself, or nothing is flagged there."""
    from judging.services.runs import start_run, target_queryset

    settings = judging_settings(first_pass.project)
    explainer = settings.explainer
    if explainer is None or explainer.pk == first_pass.judge_id or explainer.kind == Judge.Kind.IMPORTED:
        return None
    flagged = JudgeRun(project=first_pass.project, scope=JudgeRun.Scope.FLAGGED, batch=first_pass.batch)
    if not target_queryset(flagged).exists():
        return None
    return start_run(first_pass.project, explainer, scope=JudgeRun.Scope.FLAGGED, batch=first_pass.batch,
                     purpose=JudgeRun.Purpose.EXPLAIN, by=first_pass.created_by, queue=queue)
