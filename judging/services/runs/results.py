"""What a run writes: its judgements a small transaction at a time (with the call-cache rows), its progress
counters, and how it ends (done, with a first pass's flags and explainer, or failed)."""

from __future__ import annotations

import logging
import time
from collections import Counter

from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from judging.models import CallCache, Judgement, JudgeRun
from judging.services.judges import JudgeSettingsError
from judging.services.runs.cancel import RunCancelled

logger = logging.getLogger(__name__)

# Results are written at least this often, or every FLUSH_RESULTS results, in one small transaction each.
FLUSH_SECONDS = 0.5
FLUSH_RESULTS = 50

# The statuses of a run still to be executed; a cancelled run is failed, and an execution writes no outcome over it.
ACTIVE = (JudgeRun.Status.QUEUED, JudgeRun.Status.RUNNING)
OK, PARSE_ERROR, ERROR = Judgement.Status.OK, Judgement.Status.PARSE_ERROR, Judgement.Status.ERROR
# The endpoint answered: identical requests of one run share that answer, whatever it says.
ANSWERED = (OK, PARSE_ERROR)
# Every answer goes into the call cache, one that could not be read as a score too (DESIGN.md, "Runs": an identical
# call is not paid twice, so a repeated run makes no call). A run started with ask_again asks the unreadable ones
# again (targets._served_from_cache). An endpoint error has no answer to keep: the next run asks again.
CACHEABLE = ANSWERED
# What a cache row's answer is replaced by when a call asked again answers (a run with ask_again, or a row that
# another execution wrote meanwhile): the latest answer is the one served next. created_at goes with it: it says
# when the answer held came, so a resumed ask_again run serves what it asked before the restart instead of paying
# for it twice (targets._served_from_cache).
_CACHE_ANSWER_FIELDS = ["model", "request_mode", "raw", "input_tokens", "output_tokens", "latency_seconds",
                        "created_at"]



def _fail(run: JudgeRun, message: str) -> JudgeRun:
    """Failed with ``message``, unless the run has ended meanwhile (a cancel's words stay)."""
    logger.warning("judge run %s failed: %s", run.pk, message)
    _refresh_progress(run)
    JudgeRun.objects.filter(pk=run.pk, status__in=ACTIVE).update(status=JudgeRun.Status.FAILED, error=message,
                                                                 finished_at=timezone.now())
    run.refresh_from_db()
    return run


def _finish(run: JudgeRun, *, follow_up: bool) -> JudgeRun:
    """Done: the counters, and for a first pass its flags and the explainer's run, in one transaction (a run is
    never done without them, nor flagged twice into the queue). start_explanation wants a finished first pass,
    so the run is marked done before its explainer's run (which names it in ``explains``) is created.
    """
    from judging.services.triage import flag_from_run, start_explanation

    with transaction.atomic():
        # Locked, as cancel_run locks it: a run cancelled meanwhile stays cancelled, with no flags and no explainer.
        if not JudgeRun.objects.select_for_update().filter(pk=run.pk, status__in=ACTIVE).exists():
            raise RunCancelled(run.pk)
        _refresh_progress(run)
        first_pass = run.purpose == JudgeRun.Purpose.FIRST_PASS
        if first_pass:
            flag_from_run(run)
        run.status, run.finished_at = JudgeRun.Status.DONE, timezone.now()
        if not JudgeRun.objects.filter(pk=run.pk, status__in=ACTIVE).update(status=run.status,
                                                                           finished_at=run.finished_at, error=""):
            raise RunCancelled(run.pk)  # cancelled in between (a database that does not lock rows): no flags either
        if first_pass and follow_up:
            try:
                start_explanation(run, queue=True)
            except JudgeSettingsError as error:
                JudgeRun.objects.filter(pk=run.pk).update(error=f"The explainer was not started: {error}")
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
            # One row per key (Postgres refuses to update a row twice in one statement); the latest answer wins.
            rows = list({row.key: row for row in self.cache_rows}.values())
            CallCache.objects.bulk_create(rows, update_conflicts=True, unique_fields=["key"],
                                          update_fields=_CACHE_ANSWER_FIELDS)
            by_count: dict[int, list[str]] = {}
            for key, count in self.hits.items():
                by_count.setdefault(count, []).append(key)
            for count, keys in by_count.items():
                CallCache.objects.filter(key__in=keys).update(hits=F("hits") + count)
            _refresh_progress(self.run)
            active = JudgeRun.objects.filter(pk=self.run.pk, status__in=ACTIVE).exists()
        self.judgements, self.cache_rows, self.hits = [], [], Counter()
        if not active:
            # Cancelled (cancel_run): what was just written stays (its answers are in the call cache), nothing more.
            raise RunCancelled(self.run.pk)
