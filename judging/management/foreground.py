"""What the `judge` and `triage` commands share while they execute runs in the foreground: their progress lines on
stderr, and the one line (and exit status 130) of a Ctrl-C (annotate.services.interrupt)."""

from __future__ import annotations

import time
from typing import TextIO

from django.core.management.base import OutputWrapper
from django.db.models import Sum

from annotate.services.interrupt import stop_at_once  # noqa: F401 - the commands import it from here
from annotate.services.jobs import CancelRefused
from judging.models import Judge, JudgeRun
from judging.services.runs.cancel import cancel_run_from_command

# A progress line at most this often (and one when the run's first results are written).
PROGRESS_SECONDS = 5.0


class ProgressLines:
    """The run's progress on stderr, a line every PROGRESS_SECONDS: done/total, scored, failed, requests sent, cache
    hits and, for a judge with prices, the cost so far. Called by the execution (execute_run's ``progress``)."""

    def __init__(self, stream: OutputWrapper | TextIO, every: float | None = None) -> None:
        self.stream = stream
        self.every = PROGRESS_SECONDS if every is None else every
        self.started = time.monotonic()
        self.last: float | None = None

    def __call__(self, run: JudgeRun) -> None:
        now = time.monotonic()
        if self.last is not None and now - self.last < self.every:
            return
        self.last = now
        self.stream.write(progress_line(run, now - self.started))

    def ended(self, run: JudgeRun) -> None:
        """The last line, as the run ended (whatever the time since the one before)."""
        run.refresh_from_db()
        self.stream.write(progress_line(run, time.monotonic() - self.started) + f" ({run.status_label.lower()})")


def progress_line(run: JudgeRun, seconds: float) -> str:
    """One progress line of a run, from its counters as last written."""
    judge = run.judge
    counts = f"{run.done}/{run.total} judged, {run.scored} scored, {run.failed} failed"
    if judge.kind == Judge.Kind.RUBRIC:
        counts += f", {run.calls} requests sent, {run.cached} from the cache"
        if judge.price_input_per_mtok is not None or judge.price_output_per_mtok is not None:
            spent = run.judgements.filter(cached=False).aggregate(spent=Sum("cost"))["spent"] or 0.0
            counts += f", US$ {spent:.4f} so far"
    return f"run {run.pk}: {counts}, {seconds:.0f} s"


def cancelled_line(run: JudgeRun) -> str:
    """The one line of a run cancelled by Ctrl-C: what it judged, what it left, and how to go on."""
    left = max(0, run.total - run.done)
    kept = "the answers of the calls in flight included; " if run.judge.kind == Judge.Kind.RUBRIC else ""
    again = (" A new run of the judge sends only those: the answers so far come from the call cache."
             if run.judge.kind == Judge.Kind.RUBRIC and left else "")
    return (f"Run {run.pk} cancelled (Ctrl-C): {run.done} of {run.total} judged ({kept}{run.scored} scored), "
            f"{left} not judged.{again}")


def cancel_at_once(started: list[JudgeRun], command: str) -> str:
    """After a second Ctrl-C: cancel the runs started here that are still active (the first Ctrl-C may not have
    been noticed yet) and say what becomes of them."""
    for run in started:
        try:
            cancel_run_from_command(run, command)
        except CancelRefused:
            pass  # cancelled by the first Ctrl-C already, or ended
        except Exception:  # noqa: BLE001 - leaving now matters more; a worker's restart would resume it
            return (f"Stopped (Ctrl-C twice); run {run.pk} could not be marked cancelled: cancel it on its page, "
                    "or a worker's start resumes it.")
    return ("Stopped (Ctrl-C twice) without waiting for the calls in flight: their answers are not stored"
            + (f"; run{'s' if len(started) > 1 else ''} {', '.join(str(run.pk) for run in started)} cancelled."
               if started else "; no run had started."))
