"""A rubric judge's execution: each request looked up in the call cache first, the misses sent by a thread pool of
endpoint calls, their answers written (judgements and call cache) by this thread; an endpoint that goes down mid-run
(OUTAGE_FAILURES calls in a row) stops the run, and a cancel keeps the answers of the calls already in flight."""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from judging.clients import EndpointError, check_endpoint, endpoint_for
from judging.judges.rubric import RubricOutcome, RubricRequest, build_request, call_rubric_judge
from judging.models import CallCache, Judgement, JudgeRun
from judging.services.judges import current_prompt
from judging.services.runs.cancel import RunCancelled
from judging.services.runs.execute import Progress, RunFailed, stop_if_interrupted
from judging.services.runs.results import ANSWERED, CACHEABLE, ERROR, FLUSH_SECONDS, OK, _ResultWriter
from judging.services.runs.start import BLOCKING_SETTINGS, missing_key_variable, quick_check
from judging.services.runs.targets import CHUNK, Target, _any_cache_miss, _pending_chunks, _served_from_cache

logger = logging.getLogger(__name__)

# A rubric run stops, failed "Endpoint unreachable", after this many calls in a row failed because the endpoint did
# (no connection, a timeout, a 5xx or a proxy's error page, each after its retries: EndpointError.unreachable).
# Each such failure already outlasted its retries (about 7.5 s of backoff with the default 4), so eight in a row,
# with no answer between them, is an outage and not one bad request; going on would only fail every sample left
# within seconds. Eight is also more than the calls a run has in flight at the default concurrency (4), so one
# burst of calls that were already on their way when a short outage began does not stop the run by itself.
OUTAGE_FAILURES = 8


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


def execute_rubric(
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
            stop_if_interrupted(run)
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
