"""Executing a run (the Celery task and the `judge` command both call `execute_run`): rubric judges through the
call cache and a thread pool of endpoint calls, NLI judges in batched chunks of pairs."""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, nullcontext
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.db import transaction
from django.db.models import F, Max
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotate.services.jobs import CancelRefused
from annotate.text import split_sentences
from judging.clients import EndpointError, ModelSettingError, check_endpoint, endpoint_for, load_nli_model
from judging.judges.nli import PairScore, score_pair_outcomes
from judging.judges.rubric import RubricOutcome, RubricRequest, build_request, call_rubric_judge
from judging.models import CallCache, Judge, Judgement, JudgeRun
from judging.services.judges import current_prompt
from judging.services.runs import interrupt
from judging.services.runs.cancel import RunCancelled, cancel_run_from_command
from judging.services.runs.locks import _forget_lock, execution_lock, execution_mark
from judging.services.runs.results import (
    ACTIVE,
    ANSWERED,
    CACHEABLE,
    ERROR,
    FLUSH_SECONDS,
    OK,
    _fail,
    _finish,
    _ResultWriter,
)
from judging.services.runs.start import BLOCKING_SETTINGS, _queue_now, missing_key_variable, quick_check
from judging.services.runs.targets import (
    CHUNK,
    Target,
    _any_cache_miss,
    _pending_chunks,
    _served_from_cache,
    target_queryset,
)

logger = logging.getLogger(__name__)

NLI_CHUNK = 64  # pairs per scoring call: their windows are batched together
# The Celery task executes a run in slices of about this many seconds, then queues the rest behind other work.
SLICE_SECONDS = 900
# A rubric run stops, failed "Endpoint unreachable", after this many calls in a row failed because the endpoint did
# (no connection, a timeout, a 5xx or a proxy's error page, each after its retries: EndpointError.unreachable).
# Each such failure already outlasted its retries (about 7.5 s of backoff with the default 4), so eight in a row,
# with no answer between them, is an outage and not one bad request; going on would only fail every sample left
# within seconds. Eight is also more than the calls a run has in flight at the default concurrency (4), so one
# burst of calls that were already on their way when a short outage began does not stop the run by itself.
OUTAGE_FAILURES = 8

# Called with the run after each write of its progress (and while it waits for answers); the `judge` command prints.
Progress = Callable[[JudgeRun], None]



class RunFailed(Exception):
    """A run that cannot go on (endpoint, model, key variable); the message names the setting."""



def execute_new_run(
    start: Callable[[], JudgeRun | None], *, follow_up: bool = True, endpoint_checked: bool = False,
    progress: Progress | None = None,
) -> JudgeRun | None:
    """Start a run with ``start`` (a ``start_run(..., queue=False)``; None: nothing to run) and execute it here, in
    the foreground (the `judge` and `triage` commands); the run as it ended, or None.

    The run's lock is taken before the run is committed and held until it ends. Taken after the commit, a worker
    starting in between would find the run queued, with no message and nobody executing it (resume_stale_runs),
    and queue a spare message for it; the run's ``resumed`` would count a resumption that never happened, and the
    worker could even take the run before this process does.
    """
    with ExitStack() as holding:
        with transaction.atomic():
            run = start()
            if run is None:
                return None
            held = holding.enter_context(execution_lock(run.pk))
        return execute_run(run.pk, follow_up=follow_up, endpoint_checked=endpoint_checked, lock_held=held,
                           progress=progress)


def execute_run(
    run_id: int, *, max_seconds: float | None = None, follow_up: bool = True, endpoint_checked: bool = False,
    lock_held: bool = False, progress: Progress | None = None,
) -> JudgeRun:
    """Judge what the run has not judged yet; finish it (flag, queue the explainer) when nothing is left.

    Resumable and idempotent: a finished run is returned as it is, a run being
    executed by another process is left to it. With `max_seconds`, stops taking
    new targets after that long, writes what is in flight and queues the rest
    (the Celery task works in slices). `follow_up` False leaves the explainer of
    a first pass to the caller (the `triage` command runs it in the foreground).
    `endpoint_checked`: the caller has just checked the endpoint (the `judge`
    command, before writing anything), so it is not asked twice. `lock_held`:
    the caller holds the run's lock until this returns (``execute_new_run``,
    which gives no `max_seconds`: no next slice is queued under its lock). `progress`: called with the run as
    its counters are written (the `judge` command's progress lines).

    A Ctrl-C in a command executing the run here (interrupt.cancel_on_ctrl_c) cancels it as an admin's Cancel
    does. A rubric run whose endpoint fails OUTAGE_FAILURES calls in a row stops, failed "Endpoint unreachable",
    leaving the samples it did not send unjudged.
    """
    run = JudgeRun.objects.select_related("judge", "project", "rubric").get(pk=run_id)
    if run.status in (JudgeRun.Status.DONE, JudgeRun.Status.FAILED) or run.scope == JudgeRun.Scope.IMPORTED:
        return run
    try:
        with nullcontext(True) if lock_held else execution_lock(run.pk) as held:
            if not held:
                logger.info("judge run %s is being executed by another process", run.pk)
                return run
            run.refresh_from_db()
            if run.status in (JudgeRun.Status.DONE, JudgeRun.Status.FAILED):
                return run
            with execution_mark(run.pk) as interrupted:
                run, ended = _execute_held(run, interrupted=interrupted, max_seconds=max_seconds,
                                           follow_up=follow_up, endpoint_checked=endpoint_checked, progress=progress)
    except _GoesOn as going_on:
        # The next slice is queued once the lock is free: queued while it was held, a second pool process could
        # take the message at once, find the lock taken, and leave the run waiting for a worker's restart.
        _queue_now(run.pk)
        if going_on.stopped_by is not None:
            raise going_on.stopped_by from None
        return going_on.run
    if ended:
        _forget_lock(run.pk)
    return run


class _GoesOn(Exception):  # noqa: N818 - a signal, not an error
    """Raised out of the run's lock by an execution that stopped with work left: its next slice is queued once the
    lock is released. ``stopped_by``: the time limit that stopped it, raised again after the queuing."""

    def __init__(self, run: JudgeRun, stopped_by: BaseException | None = None) -> None:
        super().__init__(run.pk)
        self.run = run
        self.stopped_by = stopped_by


def _execute_held(
    run: JudgeRun, *, interrupted: bool, max_seconds: float | None, follow_up: bool, endpoint_checked: bool,
    progress: Progress | None = None,
) -> tuple[JudgeRun, bool]:
    """``execute_run`` once it holds the run's lock; the run, and whether it ended (done, or cancelled).

    ``interrupted``: the run's last execution never left (its process was killed: SIGKILL, the OOM killer). A run
    that execution had marked running is counted resumed here, whoever queued this execution: Celery delivering the
    task again after its pool process died, or a starting worker (which counts it itself, and clears the mark).
    """
    resumed = interrupted and run.status == JudgeRun.Status.RUNNING
    started = JudgeRun.objects.filter(pk=run.pk, status__in=ACTIVE).update(
        status=JudgeRun.Status.RUNNING, started_at=Coalesce(F("started_at"), timezone.now()),
        total=target_queryset(run).count(), error="", **({"resumed": F("resumed") + 1} if resumed else {}),
    )
    run.refresh_from_db()
    if not started:  # cancelled since it was read
        return run, False
    if resumed:
        logger.warning("judge run %s: its last execution was stopped mid-run (its process died); going on, "
                       "resumed %s time(s)", run.pk, run.resumed)
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    finished: bool | None  # None: cancelled meanwhile
    try:
        if run.judge.kind == Judge.Kind.RUBRIC:
            finished = _execute_rubric(run, deadline, check=not endpoint_checked, progress=progress)
        else:
            finished = _execute_nli(run, deadline, progress=progress)
    except RunFailed as failure:
        return _fail(run, str(failure)), False
    except RunCancelled:
        finished = None
    except SoftTimeLimitExceeded as limit:
        # What was written stays; the run stays "running" and the next execution goes on from there.
        logger.warning("judge run %s stopped by its time limit; queued again", run.pk)
        raise _GoesOn(run, stopped_by=limit) from None
    except Exception as error:
        try:
            _fail(run, f"the run stopped on an unexpected error: {type(error).__name__}: {error}")
        except Exception:  # noqa: BLE001 - e.g. the database went away; the original error is the one to see
            logger.exception("judge run %s: could not record its failure", run.pk)
        raise
    if finished is False:
        raise _GoesOn(run)
    if finished:
        try:
            run = _finish(run, follow_up=follow_up)
        except RunCancelled:
            finished = None
    if finished is None:
        # Cancelled meanwhile (cancel_run): the judgements written stay, their answers in the call cache.
        run = _counted_until_last_answer(run)
        logger.info("judge run %s was cancelled; it stopped after %s judgements", run.pk, run.done)
    return run, True


def _counted_until_last_answer(run: JudgeRun) -> JudgeRun:
    """A cancelled run's time runs until its last judgement was stored: the answers of the calls in flight at the
    cancel are stored after it (execute._keep_in_flight), and the run waited for them."""
    run.refresh_from_db()
    last = run.judgements.aggregate(last=Max("created_at"))["last"]
    if last is not None and run.finished_at is not None and last > run.finished_at:
        JudgeRun.objects.filter(pk=run.pk).update(finished_at=last)
        run.refresh_from_db()
    return run


def _stop_if_interrupted(run: JudgeRun, writer: _ResultWriter | None = None) -> None:
    """Cancel the run and raise RunCancelled when a Ctrl-C asked the command executing it here to stop
    (interrupt.cancel_on_ctrl_c); ``writer``'s results are written first, while the run still takes them."""
    if not interrupt.requested():
        return
    if writer is not None:
        writer.flush()
    try:
        cancel_run_from_command(run, interrupt.command_name())
    except CancelRefused:
        pass  # it ended meanwhile (cancelled from its page): stopping is all that is left to do
    raise RunCancelled(run.pk)


class _OutageStreak:
    """Calls in a row that failed because the endpoint did (RubricOutcome.unreachable); any answer, or a failure
    of the request itself (a 400, a rate limit), breaks the streak. Counted by the pool threads as each call ends
    (under a lock), so that once it is tripped no thread sends another request, however fast failures come."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0
        self.last_error = ""
        self._tripped = threading.Event()
        self._lock = threading.Lock()

    def record(self, outcome: RubricOutcome) -> None:
        with self._lock:
            if outcome.status == ERROR and outcome.unreachable:
                self.count += 1
                self.last_error = outcome.error
                if self.count >= self.limit:
                    self._tripped.set()
            elif not self._tripped.is_set():
                self.count = 0

    @property
    def tripped(self) -> bool:
        return self._tripped.is_set()


class _EndpointDown(Exception):  # noqa: N818 - a signal, not an error
    """Raised in a rubric execution's loop when its endpoint is taken to be down (_OutageStreak.tripped)."""



def _execute_rubric(
    run: JudgeRun, deadline: float | None, *, check: bool = True, progress: Progress | None = None
) -> bool:
    """Judge the pending targets with a rubric judge; True when none is left, False when stopped at the deadline."""
    judge = run.judge
    rubric_text = (run.rubric or current_prompt(run.project, "rubric")).text
    endpoint = endpoint_for(judge)

    def request_for(target: Target) -> RubricRequest:
        return build_request(judge, rubric_text, target.hypothesis, target.reference)

    # Answers this run already had from the endpoint (an earlier slice or execution): an answer that is not a chat
    # completion then does not blame the base URL (judging.clients.chat).
    answered_before = Judgement.objects.filter(run=run, cached=False, status__in=ANSWERED).exists()

    # Before anything is written: will the endpoint be needed? A run answered wholly from the cache calls nothing
    # (not even to check the endpoint); one that needs it fails here, with nothing half-written, when it is unusable.
    if check and _any_cache_miss(run, request_for):
        problem = missing_key_variable(judge)
        if problem:
            raise RunFailed(problem)
        try:
            check_endpoint(quick_check(endpoint), answered_before=answered_before)
        except EndpointError as error:
            if error.setting in BLOCKING_SETTINGS:
                raise RunFailed(str(error)) from None
            # It answered (a 429, a 5xx, a slow answer): each call retries and records its own outcome.
            logger.warning("judge run %s: the endpoint check said %s; going on", run.pk, error)

    writer = _ResultWriter(run)
    waiting: dict[str, list[Target]] = {}  # cache key -> targets waiting for that one call
    asked: set[str] = set()  # keys this execution sent: with ask_again, an unreadable answer is asked once a run
    # Pool threads only call the endpoint and hand back (request, outcome); this thread does all database work.
    # An outcome None: the request was not sent (the endpoint was taken to be down before its turn came).
    answered: queue.SimpleQueue[tuple[RubricRequest, RubricOutcome | BaseException | None]] = queue.SimpleQueue()
    outage = _OutageStreak(OUTAGE_FAILURES)

    def call(request: RubricRequest) -> None:
        if outage.tripped:
            answered.put((request, None))
            return
        try:
            outcome = call_rubric_judge(endpoint, request, with_reasoning=judge.with_reasoning,
                                        answered_before=answered_before)
        except BaseException as error:  # noqa: BLE001 - handed to the main thread, which raises it
            answered.put((request, error))
            return
        outage.record(outcome)
        answered.put((request, outcome))

    pending = 0  # calls submitted and not answered yet
    chunks = _pending_chunks(run, CHUNK)
    window = max(2 * judge.concurrency, CHUNK)  # requests queued ahead of the pool, so it never waits on us
    exhausted = stopped = False
    pool = ThreadPoolExecutor(max_workers=judge.concurrency, thread_name_prefix=f"judge-run-{run.pk}")
    try:
        while True:
            _stop_if_interrupted(run)
            while not exhausted and not stopped and pending < window:
                if deadline is not None and time.monotonic() >= deadline:
                    stopped = True
                    break
                chunk = next(chunks, None)
                if chunk is None:
                    exhausted = True
                    break
                requests = [(target, request_for(target)) for target in chunk]
                keys = {request.cache_key for _, request in requests}
                if any(row.key in keys for row in writer.cache_rows):
                    writer.flush()  # an answer this execution got for one of them answers it, not a second call
                cached = _served_from_cache(keys, with_reasoning=judge.with_reasoning, ask_again=run.ask_again,
                                            asked=asked, since=run.started_at)
                for target, request in requests:
                    key = request.cache_key
                    if key in cached:
                        writer.add(_cached_judgement(run, target, *cached[key]))
                        writer.hits[key] += 1
                    elif key in waiting:  # the same call is already on its way: its answer serves both
                        waiting[key].append(target)
                    else:
                        waiting[key] = [target]
                        asked.add(key)
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
                if outcome is None:  # not sent: its targets stay unjudged
                    waiting.pop(request.cache_key, None)
                    continue
                if isinstance(outcome, BaseException):
                    raise outcome
                _record_answer(run, writer, request, outcome, waiting.pop(request.cache_key))
            writer.flush_if_due()
            if progress is not None:
                progress(run)
            if outage.tripped:
                raise _EndpointDown
        writer.flush()
    except _EndpointDown:
        # As a cancel: nothing more is sent, the calls already sent are waited for and stored. The targets never
        # sent stay unjudged (no error judgement), so a new run of the judge sends them, and only them with the
        # answers so far in the call cache.
        pool.shutdown(wait=True, cancel_futures=True)
        _keep_in_flight(run, writer, answered, waiting)
        raise RunFailed(_outage_message(run, endpoint.base_url, outage)) from None
    except RunCancelled:
        # Cancelled (cancel_run): no call still waiting is sent, but the calls already sent are waited for and their
        # answers (paid for) stored, judgements and call cache, so the run's calls and cost are what the endpoint
        # received and the next run does not pay for them again.
        pool.shutdown(wait=True, cancel_futures=True)
        _keep_in_flight(run, writer, answered, waiting)
        raise
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        try:
            writer.flush()  # keep what came back; the rest is judged by the next execution
        except Exception:  # noqa: BLE001 - the original error is the one to report
            logger.exception("judge run %s: could not write the last results", run.pk)
        raise
    pool.shutdown(wait=True)
    return exhausted


def _outage_message(run: JudgeRun, base_url: str, outage: _OutageStreak) -> str:
    run.refresh_from_db()
    unsent = max(0, run.total - run.done)
    return (f"Endpoint unreachable: {outage.count} calls in a row to {base_url} failed after their retries, so the "
            f"run stopped rather than fail every sample left. {unsent} of {run.total} samples were not sent and stay "
            f"unjudged; of the {run.done} judged, {run.scored} got a score. When the endpoint answers again, start a "
            "new run of this judge: the answers so far come from the call cache (no call, no cost), so only the "
            f"samples without an answer are sent. The last failure: {outage.last_error}")


def _keep_in_flight(
    run: JudgeRun,
    writer: _ResultWriter,
    answered: queue.SimpleQueue[tuple[RubricRequest, RubricOutcome | BaseException | None]],
    waiting: dict[str, list[Target]],
) -> None:
    """Store the answers of the calls that were in flight when the run was cancelled (the pool has ended: all are
    in ``answered``). A call that raised stored nothing, as it would not have in a run going on."""
    while True:
        try:
            request, outcome = answered.get_nowait()
        except queue.Empty:
            break
        targets = waiting.pop(request.cache_key, None)
        if outcome is None or isinstance(outcome, BaseException) or not targets:
            continue  # not sent, or raised: nothing to store
        _record_answer(run, writer, request, outcome, targets)
    try:
        writer.flush()
    except RunCancelled:
        pass  # it is cancelled: what was just written stays
    except Exception:  # noqa: BLE001 - the cancel is what to report
        logger.exception("judge run %s: could not write the answers in flight when it was cancelled", run.pk)



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


def _cached_judgement(run: JudgeRun, target: Target, row: CallCache, outcome: RubricOutcome) -> Judgement:
    """A judgement answered from the cache (`outcome`: the stored answer read again), no call, nothing paid."""
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
    answered = outcome.status in ANSWERED
    for target in others:  # identical requests in this run: one call, the others served by its answer
        # An answer is served as from the cache (its latency kept as the cached call's, Judgement.run_*); a failure
        # made no call of its own either: no latency, or the run's mean latency would count that call twice.
        writer.add(target.judgement(run, **fields, latency_seconds=outcome.latency_seconds if answered else None,
                                    cost=0.0 if answered else None, cached=answered, attempts=0))
    if outcome.status in CACHEABLE:
        writer.cache_rows.append(CallCache(
            key=request.cache_key, model=request.model, request_mode=(outcome.request_mode or "")[:12],
            raw=outcome.raw, input_tokens=outcome.input_tokens, output_tokens=outcome.output_tokens,
            latency_seconds=outcome.latency_seconds,
        ))



def _execute_nli(run: JudgeRun, deadline: float | None, *, progress: Progress | None = None) -> bool:
    """Score the pending targets with an NLI judge; True when none is left, False when stopped at the deadline.

    A run over samples also scores each output sentence against the whole source (``sentence_scores``, one p per
    sentence: the audit page's shading, whichever run of the judge is the latest); a synthetic set's run does not.
    Each judgement keeps its windows' own p in ``raw`` (nli_raw): the model's answer, of which p is the max.
    """
    judge = run.judge
    try:
        model = load_nli_model(judge.nli_model_path, consistent_label=judge.nli_consistent_label)
    except ModelSettingError as error:
        raise RunFailed(str(error)) from None
    per_sentence = run.scope != JudgeRun.Scope.SYNTHETIC
    writer = _ResultWriter(run)
    for chunk in _pending_chunks(run, NLI_CHUNK):
        _stop_if_interrupted(run, writer)
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
            sentence_windows = None
            if per_sentence:
                # One p per output sentence (None where a sentence fits no window), in the order of the sample's
                # sentences as the audit page cuts them (stored offsets, else the same splitter).
                scored = [next(sentence_outcomes) for _ in sentence_spans[index]]
                sentence_scores = [outcome.probability for outcome in scored]
                sentence_windows = sum(outcome.windows for outcome in scored)
            writer.add(_nli_judgement(run, target, outcomes[index], sentence_scores, sentence_windows, seconds))
        writer.flush_if_due()
        if progress is not None:
            progress(run)
    writer.flush()
    return True


def nli_raw(outcome: PairScore, sentence_windows: int | None) -> str:
    """What an NLI judgement keeps as its raw answer: the p of each window over the source, in order (p is their
    max), and how many windows its sentences took, as JSON: ``{"windows": [0.12, 0.83], "sentence_windows": 3}``."""
    raw: dict[str, Any] = {"windows": [round(p, 6) for p in outcome.window_probabilities]}
    if sentence_windows is not None:
        raw["sentence_windows"] = sentence_windows
    return json.dumps(raw)


def _nli_judgement(
    run: JudgeRun, target: Target, outcome: PairScore, sentence_scores: list[float | None] | None,
    sentence_windows: int | None, seconds: float,
) -> Judgement:
    if outcome.probability is None:
        # No number, and no per-sentence figures either (as an import requires of a failed judgement).
        return target.judgement(run, status=ERROR, error=outcome.error, latency_seconds=seconds)
    return target.judgement(run, status=OK, probability=outcome.probability, latency_seconds=seconds,
                            sentence_scores=sentence_scores, raw=nli_raw(outcome, sentence_windows))
