"""Judge runs: start one, execute it (the Celery task and the `judge` command both call `execute_run`), read it back.

How a run executes (DESIGN.md, "Runs"):

- Its targets are the samples of the project, of a batch, the flagged ones, or
  a synthetic set's items. Targets this run has already judged are skipped, so
  executing a run again (a redelivered task, a worker restart, the next slice)
  goes on where it stopped; the unique (run, sample) constraint keeps a sample
  from being judged twice into the results even if two executions overlap.
- Rubric judges: every request is built first and looked up in the call cache
  in bulk; a hit becomes a judgement at once (``cached``, no call). Misses go to
  a thread pool of ``judge.concurrency`` threads that only call the endpoint
  (judging.judges.rubric.call_rubric_judge: no database in those threads); this
  thread writes results as they arrive, a small transaction at a time, with the
  cache rows of answers that came back (ok and parse_error answers: the
  endpoint answered; endpoint errors are not cached, the next run asks again).
- NLI judges score chunks of pairs with windows of many pairs batched together,
  and per output sentence too when the run is a triage first pass.
- An endpoint that cannot be reached, a model it does not serve or a missing
  API-key variable fails the run before anything is written, with a message
  naming the setting. The API key itself is read only by judging.clients.
- One process executes a run at a time: an exclusive lock file per run (the
  kernel drops it when the process dies, SIGKILL included), so a worker that
  starts can tell a run orphaned by a killed worker from one still executing
  (``resume_stale_runs``).
"""

from __future__ import annotations

import dataclasses
import fcntl
import logging
import os
import queue
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Q, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotate.models import Batch, Project, Sample
from annotate.text import split_sentences
from judging import prompts
from judging.clients import (
    Endpoint,
    EndpointError,
    ModelSettingError,
    check_endpoint,
    endpoint_for,
    load_nli_model,
)
from judging.judges.nli import PairScore, score_pair_outcomes
from judging.judges.rubric import RubricOutcome, RubricRequest, build_request, call_rubric_judge, outcome_from_raw
from judging.models import (
    AuditItem,
    CallCache,
    Judge,
    Judgement,
    JudgeRun,
    PromptVersion,
    SyntheticItem,
    SyntheticSet,
)
from judging.services.judges import JudgeSettingsError, current_prompt

logger = logging.getLogger(__name__)

# Results are written at least this often, or every FLUSH_RESULTS results, in one small transaction each.
FLUSH_SECONDS = 0.5
FLUSH_RESULTS = 50
CHUNK = 200  # targets read (and requests built) at a time
NLI_CHUNK = 64  # pairs per scoring call: their windows are batched together
# The Celery task executes a run in slices of about this many seconds, then queues the rest behind other work.
SLICE_SECONDS = 900
OK, PARSE_ERROR, ERROR = Judgement.Status.OK, Judgement.Status.PARSE_ERROR, Judgement.Status.ERROR
CACHEABLE = (OK, PARSE_ERROR)


class RunFailed(Exception):
    """A run that cannot go on (endpoint, model, key variable); the message names the setting."""


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


# ----------------------------------------------------------------------------- starting


def start_run(
    project: Project,
    judge: Judge,
    *,
    scope: str = JudgeRun.Scope.ALL,
    batch: Batch | None = None,
    synthetic_set: SyntheticSet | None = None,
    purpose: str = JudgeRun.Purpose.PLAIN,
    by: Any = None,
    queue: bool = True,
) -> JudgeRun:
    """A new run of `judge` over a scope of the project, queued for the worker (after commit) when `queue`.

    Refuses with JudgeSettingsError naming the field: a judge of another project
    or one that does not run (imported), a scope without its batch or set, a
    rubric judge whose API-key variable is not set here, an NLI model path that
    is not a directory. Records the rubric version the run will use.
    """
    if judge.project_id != project.pk:
        raise JudgeSettingsError("judge", f"judge {judge.name!r} belongs to another project.")
    if project.kind != Project.Kind.SPANS:
        raise JudgeSettingsError("project", f"project {project.slug!r} is a {project.kind} project: judges score "
                                            "span projects (an output against its source).")
    if judge.kind == Judge.Kind.IMPORTED:
        raise JudgeSettingsError("judge", f"judge {judge.name!r} holds imported outputs; it cannot be run.")
    if scope not in JudgeRun.Scope.values or scope == JudgeRun.Scope.IMPORTED:
        raise JudgeSettingsError("scope", f"scope must be all, batch, flagged or synthetic, not {scope!r}.")
    if purpose not in JudgeRun.Purpose.values:
        raise JudgeSettingsError("purpose", f"purpose must be plain, first_pass or explain, not {purpose!r}.")
    if scope == JudgeRun.Scope.BATCH and batch is None:
        raise JudgeSettingsError("batch", "a batch run needs the batch.")
    if batch is not None and batch.project_id != project.pk:
        raise JudgeSettingsError("batch", f"batch {batch.name!r} belongs to another project.")
    if scope == JudgeRun.Scope.SYNTHETIC:
        if synthetic_set is None or synthetic_set.project_id != project.pk:
            raise JudgeSettingsError("synthetic_set", "a synthetic run needs a synthetic set of this project.")
    else:
        synthetic_set = None
    if judge.kind == Judge.Kind.RUBRIC:
        problem = missing_key_variable(judge)
        if problem:
            raise JudgeSettingsError("api_key_env", problem)
    elif not Path(judge.nli_model_path).expanduser().is_dir():
        raise JudgeSettingsError(
            "nli_model_path", f"nli_model_path {judge.nli_model_path!r} of judge {judge.name!r} is not a directory."
        )
    with transaction.atomic():
        run = JudgeRun(
            project=project, judge=judge, scope=scope, purpose=purpose, batch=batch, synthetic_set=synthetic_set,
            rubric=current_prompt(project, "rubric") if judge.kind == Judge.Kind.RUBRIC else None, created_by=by,
        )
        run.total = target_queryset(run).count()
        run.save()
        if queue:
            _queue(run.pk)
    logger.info("judge run %s queued: judge %r (%s), scope %s, %s targets", run.pk, judge.name, judge.kind,
                scope, run.total)
    return run


def missing_key_variable(judge: Judge) -> str:
    """Why the judge's API-key variable cannot be used here, or "" (no variable needed, or it is set)."""
    name = judge.api_key_env
    if not name or os.environ.get(name):
        return ""
    return (f"the environment variable {name} (api_key_env of judge {judge.name!r}) is not set: set it to the API "
            "key in the environment of the web server and of the Celery worker, or change api_key_env.")


# An endpoint check that fails naming one of these settings stops a run before it starts; other failures
# (rate limits, server errors) are the calls' to retry and record.
BLOCKING_SETTINGS = ("base_url", "model", "api_key_env")


def quick_check(endpoint: Endpoint) -> Endpoint:
    """The endpoint as its check before a run uses it: one retry, so a server that is not there fails fast."""
    return dataclasses.replace(endpoint, max_retries=min(endpoint.max_retries, 1))


def _queue(run_id: int) -> None:
    from judging.tasks import execute_judge_run

    transaction.on_commit(lambda: execute_judge_run.delay(run_id))


# ----------------------------------------------------------------------------- targets


def target_queryset(run: JudgeRun) -> QuerySet:
    """The run's targets: samples, or a synthetic set's items."""
    if run.scope == JudgeRun.Scope.SYNTHETIC:
        return SyntheticItem.objects.filter(synthetic_set_id=run.synthetic_set_id)
    samples = Sample.objects.filter(project_id=run.project_id)
    if run.batch_id is not None:
        samples = samples.filter(batch_id=run.batch_id)
    if run.scope == JudgeRun.Scope.FLAGGED:
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


# ----------------------------------------------------------------------------- executing


def execute_run(
    run_id: int, *, max_seconds: float | None = None, follow_up: bool = True, endpoint_checked: bool = False
) -> JudgeRun:
    """Judge what the run has not judged yet; finish it (flag, queue the explainer) when nothing is left.

    Resumable and idempotent: a finished run is returned as it is, a run being
    executed by another process is left to it. With `max_seconds`, stops taking
    new targets after that long, writes what is in flight and queues the rest
    (the Celery task works in slices). `follow_up` False leaves the explainer of
    a first pass to the caller (the `triage` command runs it in the foreground).
    `endpoint_checked`: the caller has just checked the endpoint (the `judge`
    command, before writing anything), so it is not asked twice.
    """
    run = JudgeRun.objects.select_related("judge", "project", "rubric").get(pk=run_id)
    if run.status in (JudgeRun.Status.DONE, JudgeRun.Status.FAILED) or run.scope == JudgeRun.Scope.IMPORTED:
        return run
    with execution_lock(run.pk) as held:
        if not held:
            logger.info("judge run %s is being executed by another process", run.pk)
            return run
        run.refresh_from_db()
        if run.status in (JudgeRun.Status.DONE, JudgeRun.Status.FAILED):
            return run
        JudgeRun.objects.filter(pk=run.pk).update(
            status=JudgeRun.Status.RUNNING, started_at=Coalesce(F("started_at"), timezone.now()),
            total=target_queryset(run).count(), error="",
        )
        run.refresh_from_db()
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        try:
            if run.judge.kind == Judge.Kind.RUBRIC:
                finished = _execute_rubric(run, deadline, check=not endpoint_checked)
            else:
                finished = _execute_nli(run, deadline)
        except RunFailed as failure:
            return _fail(run, str(failure))
        except SoftTimeLimitExceeded:
            # What was written stays; the run stays "running" and the next execution goes on from there.
            logger.warning("judge run %s stopped by its time limit; queued again", run.pk)
            _queue_now(run.pk)
            raise
        except Exception as error:
            try:
                _fail(run, f"the run stopped on an unexpected error: {type(error).__name__}: {error}")
            except Exception:  # noqa: BLE001 - e.g. the database went away; the original error is the one to see
                logger.exception("judge run %s: could not record its failure", run.pk)
            raise
        if not finished:
            _queue_now(run.pk)
            return run
        run = _finish(run, follow_up=follow_up)
    _forget_lock(run.pk)
    return run


def _queue_now(run_id: int) -> None:
    with transaction.atomic():
        _queue(run_id)


def _fail(run: JudgeRun, message: str) -> JudgeRun:
    logger.warning("judge run %s failed: %s", run.pk, message)
    _refresh_progress(run)
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.FAILED, error=message,
                                              finished_at=timezone.now())
    run.refresh_from_db()
    return run


def _finish(run: JudgeRun, *, follow_up: bool) -> JudgeRun:
    """Done: the counters, and for a first pass its flags and the explainer's run, in one transaction (a run is
    never done without them, nor flagged twice into the queue)."""
    with transaction.atomic():
        _refresh_progress(run)
        note = ""
        if run.purpose == JudgeRun.Purpose.FIRST_PASS:
            from judging.services.triage import flag_from_run, start_explanation

            flag_from_run(run)
            if follow_up:
                try:
                    start_explanation(run, queue=True)
                except JudgeSettingsError as error:
                    note = f"The explainer was not started: {error}"
        JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.DONE, finished_at=timezone.now(),
                                                  error=note)
    run.refresh_from_db()
    logger.info("judge run %s done: %s scored, %s failed, %s calls, %s cached", run.pk, run.scored, run.failed,
                run.calls, run.cached)
    return run


def _refresh_progress(run: JudgeRun) -> None:
    """The progress counters, counted from the run's judgements (right after any resume or overlap)."""
    figures = Judgement.objects.filter(run=run).aggregate(
        done=Count("id"), scored=Count("id", filter=Q(status=OK)), calls=Coalesce(Sum("attempts"), 0),
        cached=Count("id", filter=Q(cached=True)),
    )
    figures["failed"] = figures["done"] - figures["scored"]
    JudgeRun.objects.filter(pk=run.pk).update(**figures)
    for field, value in figures.items():
        setattr(run, field, value)


class _ResultWriter:
    """Collects judgements (and cache rows) made in this thread and writes them a small transaction at a time."""

    def __init__(self, run: JudgeRun) -> None:
        self.run = run
        self.judgements: list[Judgement] = []
        self.cache_rows: list[CallCache] = []
        self.hits: Counter[str] = Counter()
        self.last_flush = time.monotonic()

    def add(self, judgement: Judgement) -> None:
        self.judgements.append(judgement)

    def flush_if_due(self) -> None:
        if len(self.judgements) >= FLUSH_RESULTS or time.monotonic() - self.last_flush >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        self.last_flush = time.monotonic()
        if not self.judgements and not self.cache_rows:
            return
        with transaction.atomic():
            # ignore_conflicts: a judgement another execution of this run wrote meanwhile stays the only one.
            Judgement.objects.bulk_create(self.judgements, ignore_conflicts=True)
            CallCache.objects.bulk_create(self.cache_rows, ignore_conflicts=True)
            by_count: dict[int, list[str]] = {}
            for key, count in self.hits.items():
                by_count.setdefault(count, []).append(key)
            for count, keys in by_count.items():
                CallCache.objects.filter(key__in=keys).update(hits=F("hits") + count)
            _refresh_progress(self.run)
        self.judgements, self.cache_rows, self.hits = [], [], Counter()


def _execute_rubric(run: JudgeRun, deadline: float | None, *, check: bool = True) -> bool:
    """Judge the pending targets with a rubric judge; True when none is left, False when stopped at the deadline."""
    judge = run.judge
    rubric_text = (run.rubric or current_prompt(run.project, "rubric")).text
    endpoint = endpoint_for(judge)

    def request_for(target: Target) -> RubricRequest:
        return build_request(judge, rubric_text, target.hypothesis, target.reference)

    # Before anything is written: will the endpoint be needed? A run answered wholly from the cache calls nothing
    # (not even to check the endpoint); one that needs it fails here, with nothing half-written, when it is unusable.
    if check and _any_cache_miss(run, request_for):
        problem = missing_key_variable(judge)
        if problem:
            raise RunFailed(problem)
        try:
            check_endpoint(quick_check(endpoint))
        except EndpointError as error:
            if error.setting in BLOCKING_SETTINGS:
                raise RunFailed(str(error)) from None
            # It answered (a 429, a 5xx, a slow answer): each call retries and records its own outcome.
            logger.warning("judge run %s: the endpoint check said %s; going on", run.pk, error)

    writer = _ResultWriter(run)
    waiting: dict[str, list[Target]] = {}  # cache key -> targets waiting for that one call
    # Pool threads only call the endpoint and hand back (request, outcome); this thread does all database work.
    answered: queue.SimpleQueue[tuple[RubricRequest, RubricOutcome | BaseException]] = queue.SimpleQueue()

    def call(request: RubricRequest) -> None:
        try:
            answered.put((request, call_rubric_judge(endpoint, request, with_reasoning=judge.with_reasoning)))
        except BaseException as error:  # noqa: BLE001 - handed to the main thread, which raises it
            answered.put((request, error))

    pending = 0  # calls submitted and not answered yet
    chunks = _pending_chunks(run, CHUNK)
    window = max(2 * judge.concurrency, CHUNK)  # requests queued ahead of the pool, so it never waits on us
    exhausted = stopped = False
    pool = ThreadPoolExecutor(max_workers=judge.concurrency, thread_name_prefix=f"judge-run-{run.pk}")
    try:
        while True:
            while not exhausted and not stopped and pending < window:
                if deadline is not None and time.monotonic() >= deadline:
                    stopped = True
                    break
                chunk = next(chunks, None)
                if chunk is None:
                    exhausted = True
                    break
                requests = [(target, request_for(target)) for target in chunk]
                cached = {row.key: row for row in CallCache.objects.filter(
                    key__in={request.cache_key for _, request in requests})}
                for target, request in requests:
                    key = request.cache_key
                    if key in cached:
                        writer.add(_cached_judgement(run, target, cached[key]))
                        writer.hits[key] += 1
                    elif key in waiting:  # the same call is already on its way: its answer serves both
                        waiting[key].append(target)
                    else:
                        waiting[key] = [target]
                        pool.submit(call, request)
                        pending += 1
                writer.flush_if_due()
            if not pending:
                break
            try:
                answers = [answered.get(timeout=FLUSH_SECONDS)]
            except queue.Empty:
                answers = []
            while True:  # everything else that has come back meanwhile
                try:
                    answers.append(answered.get_nowait())
                except queue.Empty:
                    break
            for request, outcome in answers:
                pending -= 1
                if isinstance(outcome, BaseException):
                    raise outcome
                _record_answer(run, writer, request, outcome, waiting.pop(request.cache_key))
            writer.flush_if_due()
        writer.flush()
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        try:
            writer.flush()  # keep what came back; the rest is judged by the next execution
        except Exception:  # noqa: BLE001 - the original error is the one to report
            logger.exception("judge run %s: could not write the last results", run.pk)
        raise
    pool.shutdown(wait=True)
    return exhausted


def needs_endpoint(project: Project, judge: Judge, *, scope: str = JudgeRun.Scope.ALL,
                   batch: Batch | None = None) -> bool:
    """Whether a new run of this (possibly unsaved) rubric judge would call its endpoint: some request of its
    targets is not in the call cache. Writes nothing (the rubric is the latest version, or the default)."""
    latest = PromptVersion.objects.filter(project=project, kind=PromptVersion.Kind.RUBRIC).order_by("-number").first()
    rubric_text = latest.text if latest is not None else prompts.default_prompt("rubric")
    run = JudgeRun(project=project, judge=judge, scope=scope, batch=batch)
    return _any_cache_miss(
        run, lambda target: build_request(judge, rubric_text, target.hypothesis, target.reference)
    )


def _any_cache_miss(run: JudgeRun, request_for: Any) -> bool:
    for chunk in _pending_chunks(run, CHUNK):
        keys = {request_for(target).cache_key for target in chunk}
        if CallCache.objects.filter(key__in=keys).count() < len(keys):
            return True
    return False


def _rubric_fields(run: JudgeRun, outcome: RubricOutcome) -> dict[str, Any]:
    return {
        "status": outcome.status,
        "score": outcome.score if outcome.status == OK else None,  # never a number that is not a clean answer
        "reasoning": outcome.reasoning,
        "raw": outcome.raw,
        "error": outcome.error,
        "prompt_version": run.rubric,
        "request_mode": (outcome.request_mode or "")[:12],
        "input_tokens": outcome.input_tokens,
        "output_tokens": outcome.output_tokens,
    }


def _cached_judgement(run: JudgeRun, target: Target, row: CallCache) -> Judgement:
    """A judgement answered from the cache: the stored answer read again, no call, nothing paid."""
    outcome = outcome_from_raw(row.raw, with_reasoning=run.judge.with_reasoning, request_mode=row.request_mode,
                               input_tokens=row.input_tokens, output_tokens=row.output_tokens)
    return target.judgement(run, **_rubric_fields(run, outcome), latency_seconds=row.latency_seconds, cost=0.0,
                            cached=True, attempts=0)


def _record_answer(
    run: JudgeRun, writer: _ResultWriter, request: RubricRequest, outcome: RubricOutcome, targets: list[Target]
) -> None:
    fields = _rubric_fields(run, outcome)
    first, *others = targets
    writer.add(first.judgement(run, **fields, latency_seconds=outcome.latency_seconds,
                               cost=run.judge.cost_of(outcome.input_tokens, outcome.output_tokens),
                               cached=False, attempts=outcome.attempts))
    answered = outcome.status in CACHEABLE
    for target in others:  # identical requests in this run: one call, the others served by its answer
        writer.add(target.judgement(run, **fields, latency_seconds=outcome.latency_seconds,
                                    cost=0.0 if answered else None, cached=answered, attempts=0))
    if answered:
        writer.cache_rows.append(CallCache(
            key=request.cache_key, model=request.model, request_mode=(outcome.request_mode or "")[:12],
            raw=outcome.raw, input_tokens=outcome.input_tokens, output_tokens=outcome.output_tokens,
            latency_seconds=outcome.latency_seconds,
        ))


def _execute_nli(run: JudgeRun, deadline: float | None) -> bool:
    """Score the pending targets with an NLI judge; True when none is left, False when stopped at the deadline."""
    judge = run.judge
    try:
        model = load_nli_model(judge.nli_model_path, consistent_label=judge.nli_consistent_label)
    except ModelSettingError as error:
        raise RunFailed(str(error)) from None
    per_sentence = run.purpose == JudgeRun.Purpose.FIRST_PASS and run.scope != JudgeRun.Scope.SYNTHETIC
    writer = _ResultWriter(run)
    for chunk in _pending_chunks(run, NLI_CHUNK):
        if deadline is not None and time.monotonic() >= deadline:
            writer.flush()
            return False
        pairs = [(target.reference, target.hypothesis) for target in chunk]
        sentence_spans: list[list[list[int]]] = []
        if per_sentence:
            for target in chunk:
                spans = target.sentences or split_sentences(target.hypothesis)
                sentence_spans.append(spans)
                pairs.extend((target.reference, target.hypothesis[start:end]) for start, end in spans)
        started = time.perf_counter()
        try:
            outcomes = score_pair_outcomes(model, pairs, max_length=judge.nli_max_length, overlap=judge.nli_overlap,
                                           batch_size=judge.nli_batch_size)
        except ModelSettingError as error:
            raise RunFailed(str(error)) from None
        seconds = (time.perf_counter() - started) / len(chunk)
        sentence_outcomes = iter(outcomes[len(chunk):])
        for index, target in enumerate(chunk):
            sentence_scores = None
            if per_sentence:
                # One p per output sentence (None where a sentence fits no window), in the order of the sample's
                # sentences as the audit page cuts them (stored offsets, else the same splitter).
                sentence_scores = [next(sentence_outcomes).probability for _ in sentence_spans[index]]
            writer.add(_nli_judgement(run, target, outcomes[index], sentence_scores, seconds))
        writer.flush_if_due()
    writer.flush()
    return True


def _nli_judgement(
    run: JudgeRun, target: Target, outcome: PairScore, sentence_scores: list[dict] | None, seconds: float
) -> Judgement:
    if outcome.probability is None:
        return target.judgement(run, status=ERROR, error=outcome.error, latency_seconds=seconds,
                                sentence_scores=sentence_scores)
    return target.judgement(run, status=OK, probability=outcome.probability, latency_seconds=seconds,
                            sentence_scores=sentence_scores)


# ----------------------------------------------------------------------------- one executor at a time


def _lock_path(run_id: int) -> Path:
    folder = Path(settings.DATA_DIR) / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"judge-run-{run_id}.lock"


@contextmanager
def execution_lock(run_id: int) -> Iterator[bool]:
    """Hold the run's lock file while executing it; yields False when another process holds it.

    flock locks belong to the open file, so the kernel releases them when the
    holder exits in any way, SIGKILL included: a free lock on a running run
    means nobody is executing it any more.
    """
    with open(_lock_path(run_id), "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def is_run_executing(run_id: int) -> bool:
    """Whether a process on this machine is executing the run now."""
    with execution_lock(run_id) as free:
        return not free


def _forget_lock(run_id: int) -> None:
    # A finished run is never executed again (execute_run returns at once), so its lock file can go.
    _lock_path(run_id).unlink(missing_ok=True)


def resume_stale_runs() -> list[int]:
    """Queue again every running run that no process is executing; the ids queued.

    The embedded broker (kombu's filesystem transport) removes a message when a
    worker takes it, so a worker killed mid-run (SIGKILL, power loss) loses the
    task despite acks_late; the worker calls this when it starts (judging.tasks)
    and the run goes on where it stopped. A queued run's message is still in the
    queue (a run is marked running as soon as a worker takes it), so it is left
    alone. A run between two slices gets a second message, which finds it done
    (or being executed) and does nothing.
    """
    resumed = []
    for run_id in JudgeRun.objects.filter(status=JudgeRun.Status.RUNNING).exclude(
        scope=JudgeRun.Scope.IMPORTED
    ).order_by("pk").values_list("pk", flat=True):
        if not is_run_executing(run_id):
            _queue_now(run_id)
            resumed.append(run_id)
    if resumed:
        logger.info("judge runs queued again after a worker start: %s", ", ".join(map(str, resumed)))
    return resumed


# ----------------------------------------------------------------------------- reading


def sample_label(sample: Sample) -> str:
    """How the `judge --json` output names a sample: its external id (the id in the imported file), else its
    database id as text."""
    return sample.external_id or str(sample.pk)


def run_summary(run: JudgeRun, *, with_judgements: bool = True) -> dict[str, Any]:
    """The `judge --json` object: the run's figures and, with_judgements, one entry per judgement.

    ``sample`` is the sample's external id (its database id as text when it has
    none), ``sample_id`` its database id; ``score`` is null unless ``status`` is
    ok; ``raw`` is the endpoint's last answer ("" for an endpoint error).
    """
    summary: dict[str, Any] = {
        "run": run.pk,
        "judge": run.judge.name,
        "mode": run.judge.mode,
        "status": run.status,
        "error": run.error,
        "items": run.total,
        "scored": run.scored,
        "failed": run.failed,
        "calls": run.calls,
        "cached": run.cached,
        "flagged": run.flagged,
        "seconds": None if run.seconds is None else round(run.seconds, 3),
    }
    if with_judgements:
        rows = (
            Judgement.objects.filter(run=run)
            .select_related("sample", "sample__batch")
            .order_by("sample__batch__position", "sample__batch_id", "sample__position", "sample_id",
                      "synthetic_item_id")
        )
        entries = []
        for judgement in rows.iterator(chunk_size=2000):
            entry: dict[str, Any] = {}
            if judgement.sample is not None:
                entry |= {"sample": sample_label(judgement.sample), "sample_id": judgement.sample_id,
                          "batch": judgement.sample.batch.name}
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
