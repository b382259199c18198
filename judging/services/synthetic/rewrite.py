"""Executing a synthetic set: the writer endpoint rewrites every sentence, resumably, one process per set (a lock).

A rewrite that fails is stored as failed, never invented, and the items of that
output and type are not built. Stored rewrites are never asked for again. Only a
queued or running set is written: a cancelled one (cancel.cancel_synthetic_set) is
left as it is, and one being written stops at its next progress write.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass
from pathlib import Path

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotate.services import interrupt
from annotate.services.jobs import CancelRefused
from annotate.services.jobs.locks import exclusive, lock_file, orphaned_ids, start_held
from judging import prompts
from judging import synthetic as nesting
from judging.clients import Endpoint, EndpointError, chat, endpoint_for
from judging.models import Judge, PromptVersion, SyntheticRewrite, SyntheticSet
from judging.parsing import first_json_object
from judging.services.runs import missing_key_variable
from judging.services.synthetic.cancel import SetCancelled, cancel_synthetic_set_from_command
from judging.services.synthetic.sets import SyntheticSetError, _gold_items, _queue, build_items, output_sentences

# Said in every request whatever the project's edited prompt says: JSON mode refuses a request without "JSON".
REWRITE_SYSTEM = 'You rewrite one sentence of a text. Answer with one JSON object: {"rewritten": "<the new sentence>"}.'

logger = logging.getLogger(__name__)

# The statuses of a set still to be written; a cancelled set is failed, and an execution writes nothing over it.
ACTIVE = (SyntheticSet.Status.QUEUED, SyntheticSet.Status.RUNNING)


@dataclass(frozen=True)
class RewriteOutcome:
    status: str
    rewritten: str
    raw: str
    error: str


def _prompt_of(synthetic_set: SyntheticSet, hallucination_type: str) -> PromptVersion | None:
    return synthetic_set.intrinsic_prompt if hallucination_type == nesting.INTRINSIC else synthetic_set.extrinsic_prompt


def resume_synthetic_set(synthetic_set: SyntheticSet, *, retry_failed: bool = False) -> SyntheticSet:
    """Queue the set again (after a stop, or to retry its failed rewrites); stored good rewrites are kept."""
    if synthetic_set.writer is None:
        raise SyntheticSetError("this set was imported and has no writer to ask again", field="writer")
    if is_set_executing(synthetic_set.pk):
        raise SyntheticSetError("the set is being written now; wait until it is done or has stopped",
                                field="status")
    with transaction.atomic():
        if retry_failed:
            synthetic_set.rewrites.filter(status=SyntheticRewrite.Status.ERROR).delete()
        synthetic_set.done = synthetic_set.rewrites.count()
        cancel = synthetic_set.cancel_note
        synthetic_set.status = SyntheticSet.Status.QUEUED
        # Why it stopped last time (a failure, a cancel: its line and who and when) no longer holds once it goes
        # on; the notes on skipped outputs stay.
        synthetic_set.error = "\n".join(line for line in synthetic_set.error.splitlines()
                                        if not line.startswith("Stopped:") and line != cancel)
        synthetic_set.cancelled_by = None
        synthetic_set.cancelled_at = None
        synthetic_set.queued_at = timezone.now()  # its wait for a worker counts from now, not its creation (job_wait)
        synthetic_set.save(update_fields=["done", "status", "error", "cancelled_by", "cancelled_at", "queued_at"])
        _queue(synthetic_set)
    return synthetic_set


def _lock_path(set_id: int) -> Path:
    return lock_file(f"synthetic-set-{set_id}.lock")


def execution_lock(set_id: int) -> AbstractContextManager[bool]:
    """Hold the set's lock file while writing it; yields False when another process holds it.

    A free lock on a running set means nobody is writing it any more, and it
    may be queued again (see ``exclusive``).
    """
    return exclusive(_lock_path(set_id))


def is_set_executing(set_id: int) -> bool:
    with execution_lock(set_id) as free:
        return not free


def resume_stale_synthetic_sets() -> list[int]:
    """Queue again every queued or running set that no process is writing and no message waits for; the ids queued.

    The worker calls this on start: the embedded broker drops a message once a
    worker takes it, so a worker killed mid-set would otherwise leave the set
    running for ever. A set whose message still waits in the queue is in hand
    (a second worker starting beside the first must not start a second chain
    of work on it), so it is left alone.

    The queue is read before the locks, so a message a worker takes in between
    shows as the lock its execution holds; only in the instant before that
    execution takes the lock does the set look orphaned and get a spare
    message, which then finds it locked or done.
    """
    from judging import tasks

    pending = list(SyntheticSet.objects.filter(
        status__in=(SyntheticSet.Status.QUEUED, SyntheticSet.Status.RUNNING), writer__isnull=False
    ).order_by("pk").values_list("pk", flat=True))
    resumed = orphaned_ids(pending, tasks.execute_synthetic_set, is_set_executing)
    for set_id in resumed:
        tasks.execute_synthetic_set.delay(set_id)
    if resumed:
        logger.info("synthetic sets queued again after a worker start: %s", ", ".join(map(str, resumed)))
    return resumed


def _messages(prompt: str, *, source: str, output: str, sentence: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": REWRITE_SYSTEM},
        {"role": "user", "content": prompts.fill_rewrite_prompt(prompt, source=source, output=output, sentence=sentence)},
    ]


def write_rewrite(endpoint: Endpoint, messages: list[dict[str, str]], original: str) -> RewriteOutcome:
    """Ask the writer for one rewrite; any failure comes back as an error with the raw answer, never a guess."""
    try:
        answer = chat(endpoint, messages, json_schema=prompts.rewrite_schema(), temperature=0.0)
    except EndpointError as error:
        return RewriteOutcome("error", "", "", str(error))
    raw = answer.text or ""
    parsed = first_json_object(raw)
    if parsed is None:
        return RewriteOutcome("error", "", raw, "the answer holds no JSON object")
    if "rewritten" not in parsed:
        return RewriteOutcome("error", "", raw, 'the answer\'s JSON has no "rewritten" field')
    problem = nesting.rewrite_problem(original, parsed["rewritten"])
    if problem is not None:
        return RewriteOutcome("error", "", raw, problem)
    return RewriteOutcome("ok", parsed["rewritten"].strip(), raw, "")


def _fail(synthetic_set: SyntheticSet, message: str) -> SyntheticSet:
    """Failed with ``message`` below its notes, unless the set has ended meanwhile (a cancel's words stay)."""
    notes = "\n".join(line for line in (synthetic_set.error, message) if line)
    SyntheticSet.objects.filter(pk=synthetic_set.pk, status__in=ACTIVE).update(status=SyntheticSet.Status.FAILED,
                                                                               error=notes)
    synthetic_set.refresh_from_db()
    return synthetic_set


def _record_progress(set_id: int, done: int) -> None:
    """Write how many rewrites the set has; raises SetCancelled once it is no longer queued or running.

    The count is written either way, so a cancelled set shows what it stored, this last answer included.
    """
    if not SyntheticSet.objects.filter(pk=set_id, status__in=ACTIVE).update(done=done):
        SyntheticSet.objects.filter(pk=set_id).update(done=done)
        raise SetCancelled(set_id)


def execute_new_set(start: Callable[[], SyntheticSet]) -> SyntheticSet:
    """Create a set with ``start`` (a ``create_synthetic_set(..., queue=False)``) and write it here, in the
    foreground (the `synthetic_set` command); the set as it ended.

    The set's lock is taken before the set is committed and held until it ends (annotate.services.jobs.start_held):
    taken after the commit, a worker starting in between (``resume_stale_synthetic_sets``) would find the set queued
    with no message and nobody writing it, queue a spare message for it, and could take it before this process does.
    """
    with ExitStack() as holding:
        synthetic_set, held = start_held(holding, start, execution_lock)
        assert synthetic_set is not None
        return execute_synthetic_set(synthetic_set.pk, lock_held=held)


def execute_synthetic_set(set_id: int, *, lock_held: bool = False) -> SyntheticSet:
    """Write every rewrite the set still lacks, then build its items. Runs again safely (task redelivery).

    One process at a time per set (a lock file); a second delivery while the
    first is writing returns at once. ``lock_held``: the caller holds the set's
    lock until this returns (``execute_new_set``).
    """
    with nullcontext(True) if lock_held else execution_lock(set_id) as held:
        synthetic_set = SyntheticSet.objects.select_related(
            "project", "writer", "intrinsic_prompt", "extrinsic_prompt").get(pk=set_id)
        if not held or not synthetic_set.is_active:
            return synthetic_set  # written elsewhere now, done, or failed or cancelled (Resume queues it again)
        synthetic_set = _execute(synthetic_set)
    if synthetic_set.status == SyntheticSet.Status.DONE:
        _lock_path(set_id).unlink(missing_ok=True)  # a done set is never written again
    return synthetic_set


def _execute(synthetic_set: SyntheticSet) -> SyntheticSet:
    writer = synthetic_set.writer
    if writer is None:
        if not synthetic_set.rewrites.exists():
            return _fail(synthetic_set, "The set has no writer (it was deleted) and no rewrites.")
    elif missing := missing_key_variable(writer):
        return _fail(synthetic_set, f"Stopped. {missing}")
    elif synthetic_set.intrinsic_prompt is None or synthetic_set.extrinsic_prompt is None:
        return _fail(synthetic_set, "Stopped: the set records no rewrite prompt to send.")
    if not SyntheticSet.objects.filter(pk=synthetic_set.pk, status__in=ACTIVE).update(
            status=SyntheticSet.Status.RUNNING):
        synthetic_set.refresh_from_db()
        return synthetic_set  # cancelled since it was read: nothing asked
    synthetic_set.status = SyntheticSet.Status.RUNNING
    try:
        if writer is not None:
            _write_missing(synthetic_set, writer)
        with transaction.atomic():
            # Locked, as the cancel locks it: a set cancelled meanwhile stays cancelled, with no items built.
            if not SyntheticSet.objects.select_for_update().filter(pk=synthetic_set.pk, status__in=ACTIVE).exists():
                raise SetCancelled(synthetic_set.pk)
            build_items(synthetic_set)
            if not SyntheticSet.objects.filter(pk=synthetic_set.pk, status__in=ACTIVE).update(
                    status=SyntheticSet.Status.DONE):
                raise SetCancelled(synthetic_set.pk)  # a database that does not lock rows: no items either
    except SetCancelled:
        # The rewrites it stored stay (they were paid for); Resume goes on from there.
        synthetic_set.refresh_from_db()
        logger.info("synthetic set %s was cancelled; it stopped with %s of %s rewrites", synthetic_set.pk,
                    synthetic_set.done, synthetic_set.total)
        return synthetic_set
    except Exception as error:
        _fail(synthetic_set, f"Stopped: {type(error).__name__}: {error}")
        raise
    synthetic_set.refresh_from_db()
    return synthetic_set


def _write_missing(synthetic_set: SyntheticSet, writer: Judge) -> None:
    n = synthetic_set.sentences_per_output
    stored = set(synthetic_set.rewrites.values_list("sample_id", "type", "sentence_index"))
    done = len(stored)
    jobs = []
    for gold in _gold_items(synthetic_set):
        sample = gold.sample
        spans = output_sentences(sample)
        if len(spans) != n:
            continue  # the output changed since the set was made; build_items says so
        for hallucination_type in nesting.HALLUCINATION_TYPES:
            prompt = _prompt_of(synthetic_set, hallucination_type)
            for index, (start, end) in enumerate(spans):
                if (sample.pk, hallucination_type, index) in stored:
                    continue
                original = sample.summary[start:end]
                messages = _messages(prompt.text, source=sample.passage.text, output=sample.summary,
                                     sentence=original)
                jobs.append((sample, hallucination_type, index, original, prompt, messages))
    _record_progress(synthetic_set.pk, done)
    if not jobs:
        return
    endpoint = endpoint_for(writer)
    # Calls run in threads up to the writer's concurrency; rows are written here, in this thread, one per answer,
    # so a killed worker loses at most the answers in flight and a resumed run asks only for those.
    with ThreadPoolExecutor(max_workers=max(1, min(writer.concurrency, len(jobs)))) as pool:
        futures = {pool.submit(write_rewrite, endpoint, job[5], job[3]): job for job in jobs}
        unstored = set(futures)
        try:
            for future in _as_answered(futures, synthetic_set):
                unstored.discard(future)
                _store_rewrite(synthetic_set, futures[future], future.result())
                done += 1
                _record_progress(synthetic_set.pk, done)
        except SetCancelled:
            # Cancelled: no call still waiting is sent; the calls in flight end, and their answers (paid for) are
            # stored too, so a resume does not ask for them again.
            pool.shutdown(wait=True, cancel_futures=True)
            answered = [future for future in unstored if not future.cancelled() and future.exception() is None]
            for future in answered:
                _store_rewrite(synthetic_set, futures[future], future.result())
            SyntheticSet.objects.filter(pk=synthetic_set.pk).update(done=done + len(answered))
            raise
        except BaseException:
            # A time limit or a bug: do not send the calls still waiting (what is stored stays stored).
            pool.shutdown(wait=False, cancel_futures=True)
            raise


# How often, at most, a Ctrl-C in the command writing the set here is looked for while no answer comes.
INTERRUPT_POLL_SECONDS = 0.5


def _as_answered(
    futures: Iterable[Future[RewriteOutcome]], synthetic_set: SyntheticSet
) -> Iterator[Future[RewriteOutcome]]:
    """The calls' futures as they are answered (as ``as_completed``); between two waits, a Ctrl-C in the command
    writing the set here (annotate.services.interrupt) cancels the set in its name and raises SetCancelled, as an
    admin's cancel noticed at the next progress write does: the calls in flight are then waited for and stored."""
    pending = set(futures)
    while pending:
        if interrupt.requested():
            try:
                cancel_synthetic_set_from_command(synthetic_set, interrupt.command_name())
            except CancelRefused:
                pass  # it ended meanwhile (cancelled from its page): stopping is all that is left to do
            raise SetCancelled(synthetic_set.pk)
        answered, pending = wait(pending, timeout=INTERRUPT_POLL_SECONDS, return_when=FIRST_COMPLETED)
        yield from answered


def _store_rewrite(synthetic_set: SyntheticSet, job: tuple, outcome: RewriteOutcome) -> None:
    sample, hallucination_type, index, original, prompt, _ = job
    try:
        SyntheticRewrite.objects.get_or_create(
            synthetic_set=synthetic_set, sample=sample, sentence_index=index, type=hallucination_type,
            defaults={"original": original, "rewritten": outcome.rewritten, "prompt": prompt,
                      "raw": outcome.raw, "status": outcome.status, "error": outcome.error},
        )
    except IntegrityError:
        pass  # stored meanwhile by another delivery of the task
