"""Triage, the paper's recommendation: a fast first pass flags outputs, a judge with reasoning explains the flagged
ones, and the flagged outputs go to the audit queue (DESIGN.md, "Triage").

Thresholds are the project's (JudgingSettings): an LLM score <= llm_flag_at_most
(3 by default) or an NLI p < nli_flag_below (0.5) flags. A judgement that is not
ok (a parse error, an endpoint error) never flags: it has no number, and the run
lists it as failed instead.

The explainer of a triage judges the samples that triage's first pass flagged,
not the whole audit queue (which also holds what other runs and imports
flagged): the run's ``explains`` names its first pass. Everything the explainer needs is checked before the
first pass starts (start_triage).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet

from annotate.models import Batch, Project
from judging.labels import setting_label
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


def flagging(settings: JudgingSettings) -> Q:
    """is_flagged as a filter on judgements, for the database to apply (one rule, two forms)."""
    return Q(status=Judgement.Status.OK) & (
        Q(score__lte=settings.llm_flag_at_most) | Q(score__isnull=True, probability__lt=settings.nli_flag_below)
    )


def flag_reason(judgement: Judgement, settings: JudgingSettings, judge: Judge, run: JudgeRun) -> str:
    """Why a sample is in the audit queue, as the queue shows it."""
    if judgement.score is not None:
        rule = f"score {judgement.score} <= {settings.llm_flag_at_most}"
    else:
        rule = f"p {judgement.probability:.3f} < {settings.nli_flag_below:g}"
    return f"{rule} from judge {judge.name} (run {run.pk})"[:300]


def _flagged_judgements(run: JudgeRun, settings: JudgingSettings) -> list[Judgement]:
    """The run's judgements that flag their sample under the project's thresholds."""
    return list(Judgement.objects.filter(run=run, sample__isnull=False).filter(flagging(settings)))


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


def explainer_to_run(settings: JudgingSettings) -> Judge | None:
    """The judge that explains a triage's flags, or None: no explainer set, the first-pass judge itself (its
    answer is already there), or an imported one (its outputs were imported, it never runs)."""
    explainer = settings.explainer
    if explainer is None or explainer.pk == settings.first_pass_id or explainer.kind == Judge.Kind.IMPORTED:
        return None
    return explainer


def first_pass_refusal(settings: JudgingSettings) -> str:
    """Why no triage can start under these settings, or "": no first-pass judge, or one that holds imported outputs.

    Known from the saved settings alone, so the judges page shows it before Start triage is pressed, in the words
    start_triage refuses with. An imported judge never runs: its outputs are flagged when they are imported, which
    the app does not do from a page, so the message names the README section as well as the fix on the page.
    """
    first = settings.first_pass
    label = setting_label("first_pass")
    if first is None:
        return f"The project has no first-pass judge: choose one as {label} in the triage settings and save them."
    if first.kind == Judge.Kind.IMPORTED:
        return (f"The first-pass judge {first.name!r} holds imported outputs and cannot run: choose a rubric or NLI "
                f"judge as {label} in the triage settings and save them. Imported outputs are flagged when they "
                "are imported, with the import's flag option (README, \"Importing and exporting judge outputs\").")
    return ""


def start_triage(project: Project, *, batch: Batch | None = None, by: Any = None, queue: bool = True) -> JudgeRun:
    """Start the project's first pass over all its samples or one batch; when it is done it flags, and the
    explainer (if the settings name one) runs on the samples it flagged.

    Refuses with JudgeSettingsError naming the setting, before anything is written, when the first pass or the
    explainer could not run from here (start_run's checks: kind, API-key variable, model path): an explainer
    that cannot start would otherwise be found only after the whole first pass had run.
    """
    from judging.services.runs import check_judge_runs_here, start_run

    settings = judging_settings(project)
    refusal = first_pass_refusal(settings)
    if refusal or settings.first_pass is None:
        raise JudgeSettingsError("first_pass", refusal)
    check_judge_runs_here(settings.first_pass)
    explainer = explainer_to_run(settings)
    if explainer is not None:
        try:
            check_judge_runs_here(explainer)
        except JudgeSettingsError as error:
            raise JudgeSettingsError(
                error.field, f"The explainer {explainer.name!r} could not run, so triage was not started: {error}"
            ) from None
    scope = JudgeRun.Scope.BATCH if batch is not None else JudgeRun.Scope.ALL
    return start_run(project, settings.first_pass, scope=scope, batch=batch, purpose=JudgeRun.Purpose.FIRST_PASS,
                     by=by, queue=queue)


def samples_flagged_by(first_pass: JudgeRun, settings: JudgingSettings) -> QuerySet:
    """The ids of the samples a first pass flags under the project's thresholds (a subquery, not a list: a big
    project may flag more samples than a query may carry as parameters)."""
    return (Judgement.objects.filter(run=first_pass, sample__isnull=False).filter(flagging(settings))
            .values("sample_id"))


def explain_targets(explain: JudgeRun) -> QuerySet:
    """The ids of the samples an explain run judges: those its first pass (``explains``) flagged; for an explain run
    made before runs named their first pass, the audit queue, as it was then."""
    if explain.explains_id is None:
        return AuditItem.objects.filter(project_id=explain.project_id).values("sample_id")
    return samples_flagged_by(explain.explains, judging_settings(explain.project))


def start_explanation(first_pass: JudgeRun, *, queue: bool = True) -> JudgeRun | None:
    """The explainer's run over the samples this first pass flagged (in its batch, if any); None when the settings
    name no explainer to run (explainer_to_run) or the first pass flagged nothing.

    Not skipped: a flagged output the same explainer has explained before with the same rubric version is judged
    again into this run, from the call cache (an identical request is never sent twice, and costs nothing), so
    the run holds an explanation for every output its triage flagged.
    """
    from judging.services.runs import start_run

    if first_pass.purpose != JudgeRun.Purpose.FIRST_PASS or first_pass.status != JudgeRun.Status.DONE:
        raise ValueError(f"run {first_pass.pk} is not a finished first pass: only those are explained")
    settings = judging_settings(first_pass.project)
    explainer = explainer_to_run(settings)
    if explainer is None or explainer.pk == first_pass.judge_id:
        return None
    if not samples_flagged_by(first_pass, settings).exists():
        return None
    return start_run(first_pass.project, explainer, scope=JudgeRun.Scope.FLAGGED, batch=first_pass.batch,
                     purpose=JudgeRun.Purpose.EXPLAIN, explains=first_pass, by=first_pass.created_by, queue=queue)
