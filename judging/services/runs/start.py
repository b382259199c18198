"""Starting a run: the checks before one (settings, API-key variable, endpoint), creating and queuing it, and
whether a new run would call its endpoint at all."""

from __future__ import annotations

import dataclasses
import logging
import os
from typing import Any

from django.db import transaction

from annotate.models import Batch, Project
from judging import prompts
from judging.clients import Endpoint
from judging.clients.chat.allowed import key_refusal
from judging.clients.nli import ModelSettingError, check_nli_checkpoint
from judging.judges.rubric import build_request
from judging.labels import setting_label
from judging.models import Judge, JudgeRun, PromptVersion, SyntheticSet
from judging.services.judges import JudgeSettingsError, current_prompt
from judging.services.runs.targets import _any_cache_miss, target_queryset

logger = logging.getLogger(__name__)


def start_run(
    project: Project,
    judge: Judge,
    *,
    scope: str = JudgeRun.Scope.ALL,
    batch: Batch | None = None,
    synthetic_set: SyntheticSet | None = None,
    purpose: str = JudgeRun.Purpose.PLAIN,
    explains: JudgeRun | None = None,
    by: Any = None,
    queue: bool = True,
    ask_again: bool = False,
) -> JudgeRun:
    """A new run of `judge` over a scope of the project, queued for the worker (after commit) when `queue`.

    Refuses with JudgeSettingsError naming the field: a judge of another project
    or one that does not run (imported), a scope without its batch or set, a
    rubric judge whose API-key variable is not set here, an NLI model path that
    is not a directory or holds another kind of model (config.json says), ``ask_again``
    for a judge that is not a rubric LLM judge. Records the rubric version the run
    will use. ``explains``: for an explain run, the first pass whose flags it judges.
    ``ask_again``: cached answers that do not parse as a score are asked again
    instead of served (kept on the run, so a resumed execution keeps the choice).
    """
    if judge.project_id != project.pk:
        raise JudgeSettingsError("judge", f"Judge {judge.name!r} belongs to another project.")
    if project.kind != Project.Kind.SPANS:
        raise JudgeSettingsError("project", f"Project {project.slug!r} is a {project.kind} project: judges score "
                                            "span projects (an output against its source).")
    if judge.kind == Judge.Kind.IMPORTED:
        raise JudgeSettingsError("judge", f"Judge {judge.name!r} holds imported outputs; it cannot be run.")
    if scope not in JudgeRun.Scope.values or scope == JudgeRun.Scope.IMPORTED:
        raise JudgeSettingsError("scope", f"The scope must be all, batch, flagged or synthetic, not {scope!r}.")
    if purpose not in JudgeRun.Purpose.values:
        raise JudgeSettingsError("purpose", f"The purpose must be plain, first_pass or explain, not {purpose!r}.")
    if scope == JudgeRun.Scope.BATCH and batch is None:
        raise JudgeSettingsError("batch", "A batch run needs the batch.")
    if batch is not None and batch.project_id != project.pk:
        raise JudgeSettingsError("batch", f"Batch {batch.name!r} belongs to another project.")
    if scope == JudgeRun.Scope.SYNTHETIC:
        if synthetic_set is None or synthetic_set.project_id != project.pk:
            raise JudgeSettingsError("synthetic_set", "A synthetic run needs a synthetic set of this project.")
    else:
        synthetic_set = None
    if ask_again and judge.kind != Judge.Kind.RUBRIC:
        raise JudgeSettingsError("ask_again", f"Judge {judge.name!r} is not a rubric LLM judge "
                                              f"({judge.get_kind_display()}): asking again for answers that could "
                                              "not be read applies to rubric LLM judges only.")
    check_judge_runs_here(judge)
    with transaction.atomic():
        run = JudgeRun(
            project=project, judge=judge, scope=scope, purpose=purpose, batch=batch, synthetic_set=synthetic_set,
            explains=explains if purpose == JudgeRun.Purpose.EXPLAIN else None,
            rubric=current_prompt(project, "rubric") if judge.kind == Judge.Kind.RUBRIC else None, created_by=by,
            ask_again=ask_again,
        )
        run.total = target_queryset(run).count()
        run.save()
        if queue:
            _queue(run.pk)
    logger.info("judge run %s queued: judge %r (%s), scope %s, %s targets", run.pk, judge.name, judge.kind,
                scope, run.total)
    return run


def start_or_reuse_run(
    project: Project,
    judge: Judge,
    *,
    scope: str = JudgeRun.Scope.ALL,
    batch: Batch | None = None,
    by: Any = None,
    ask_again: bool = False,
) -> tuple[JudgeRun, bool]:
    """A plain run of ``judge`` over the scope, unless the same one is still queued or running: ``(run, started)``.

    The same run: this judge, purpose plain, the same scope and batch, the same ``ask_again`` and the rubric version
    a new run would use (a rubric edited since makes a new run). Such a run is answered instead of starting a
    second one, so a request retried after a timeout does not double the work and its cost; a finished or
    failed run does not count. The judge's row is locked meanwhile, so two identical requests at once start one
    run (on a database that locks rows). Refusals: those of :func:`start_run`.
    """
    with transaction.atomic():
        list(Judge.objects.select_for_update().filter(pk=judge.pk).values_list("pk", flat=True))
        rubric = current_prompt(project, "rubric") if judge.kind == Judge.Kind.RUBRIC else None
        same = JudgeRun.objects.filter(
            project=project, judge=judge, purpose=JudgeRun.Purpose.PLAIN, scope=scope, batch=batch,
            synthetic_set=None, rubric=rubric, ask_again=ask_again,
            status__in=(JudgeRun.Status.QUEUED, JudgeRun.Status.RUNNING),
        ).order_by("-created_at", "-id").first()
        if same is not None:
            logger.info("judge run %s reused: judge %r, scope %s, still %s", same.pk, judge.name, scope, same.status)
            return same, False
        return start_run(project, judge, scope=scope, batch=batch, by=by, ask_again=ask_again), True


def check_judge_runs_here(judge: Judge) -> None:
    """Refuse, with JudgeSettingsError naming the field, a judge that cannot run from this server: one holding
    imported outputs, a rubric judge whose API-key variable is not set, an NLI judge whose model path is neither a
    directory nor a model id in the local Hugging Face cache, has no config.json yet (a judge may be saved before its model is copied in, not run) or holds
    another kind of model (config.json alone: the model loads on the worker).

    start_run makes these checks for its judge; start_triage makes them for the explainer too, before the first
    pass starts, so that a triage never stops halfway on a setting it could have named at once.
    """
    if judge.kind == Judge.Kind.IMPORTED:
        raise JudgeSettingsError("judge", f"Judge {judge.name!r} holds imported outputs; it cannot be run.")
    if judge.kind == Judge.Kind.RUBRIC:
        problem = missing_key_variable(judge)
        if problem:
            raise JudgeSettingsError("api_key_env", problem)
        return
    try:
        check_nli_checkpoint(judge.nli_model_path, judge.nli_consistent_label)
    except ModelSettingError as error:
        raise JudgeSettingsError(error.setting, f"Judge {judge.name!r} cannot be run: {error}") from None


def missing_key_variable(judge: Judge) -> str:
    """Why the judge's API-key variable cannot be used here, or "" (no variable needed, or it is allowed for the
    judge's host by FAITHLAB_JUDGE_KEYS and set)."""
    name = judge.api_key_env
    if not name:
        return ""
    refusal = key_refusal(name, judge.base_url)
    if refusal:
        return f"Judge {judge.name!r} cannot be run: {refusal}"
    if os.environ.get(name):
        return ""
    return (f"The environment variable {name} (the {setting_label('api_key_env')} of judge {judge.name!r}) is not "
            "set: set it to the API key in the environment of the web server and of the Celery worker, or change the "
            "judge's variable.")


# An endpoint check that fails naming one of these settings stops a run before it starts; other failures
# (rate limits, server errors) are the calls' to retry and record.
BLOCKING_SETTINGS = ("base_url", "model", "api_key_env")


def quick_check(endpoint: Endpoint) -> Endpoint:
    """The endpoint as its check before a run uses it: one retry, so a server that is not there fails fast."""
    return dataclasses.replace(endpoint, max_retries=min(endpoint.max_retries, 1))


def _queue(run_id: int) -> None:
    from judging.tasks import execute_judge_run

    transaction.on_commit(lambda: execute_judge_run.delay(run_id))



def _queue_now(run_id: int) -> None:
    with transaction.atomic():
        _queue(run_id)



def needs_endpoint(project: Project, judge: Judge, *, scope: str = JudgeRun.Scope.ALL,
                   batch: Batch | None = None, ask_again: bool = False) -> bool:
    """Whether a new run of this (possibly unsaved) rubric judge would call its endpoint: some request of its
    targets is not in the call cache (with `ask_again`, or its cached answer does not parse as a score). Writes
    nothing (the rubric is the latest version, or the default)."""
    latest = PromptVersion.objects.filter(project=project, kind=PromptVersion.Kind.RUBRIC).order_by("-number").first()
    rubric_text = latest.text if latest is not None else prompts.default_prompt("rubric")
    run = JudgeRun(project=project, judge=judge, scope=scope, batch=batch, ask_again=ask_again)
    return _any_cache_miss(
        run, lambda target: build_request(judge, rubric_text, target.hypothesis, target.reference)
    )
