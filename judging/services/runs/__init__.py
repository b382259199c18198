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
  cache rows of the answers that came back (ok and parse_error: the endpoint
  answered, so a repeated run makes no call; a cached answer is read again with
  today's parser). Endpoint errors are not cached: the next run asks again. A
  run started with ``ask_again`` asks again the calls whose cached answer does
  not parse as a score, and their new answers replace the rows.
- NLI judges score chunks of pairs with windows of many pairs batched together,
  and per output sentence too when the run is a triage first pass.
- An endpoint that cannot be reached, a model it does not serve or a missing
  API-key variable fails the run before anything is written, with a message
  naming the setting. The API key itself is read only by judging.clients. An
  endpoint that goes down mid-run (rubric_calls.OUTAGE_FAILURES calls in a row
  failing because it did) stops the run, failed "Endpoint unreachable", the
  samples it did not send left unjudged.
- One process executes a run at a time: an exclusive lock file per run (the
  kernel drops it when the process dies, SIGKILL included), so a worker that
  starts can tell a run orphaned by a killed worker from one still executing
  (``resume_stale_runs``, queued runs whose message was lost included); a mark
  file left by a killed execution lets the next one, however it was queued,
  count the run resumed.

The package, by topic: ``start`` (checks, creating and queuing a run), ``targets`` (what a run judges),
``execute`` (executing: the entry points, the lock, slices and resumption), ``rubric_calls`` (a rubric judge's
execution: call cache, thread pool, an endpoint outage), ``nli_scoring`` (an NLI judge's: chunks of pairs),
``results`` (writing judgements, progress, done or failed), ``locks`` (one executor at a time, resuming orphaned
runs), ``cancel`` (an admin's cancel of a queued or running run), ``interrupt`` (Ctrl-C in a command executing a
run cancels it), ``summary`` (reading runs back), ``figures`` (a run's counts, tokens and cost, for its page and its
summary). Import from the package; the names below are its interface.
"""

from __future__ import annotations

from judging.services.runs.cancel import RunCancelled, cancel_run
from judging.services.runs.execute import SLICE_SECONDS, RunFailed, execute_new_run, execute_run
from judging.services.runs.locks import execution_lock, is_run_executing, resume_stale_runs
from judging.services.runs.nli_scoring import NLI_CHUNK
from judging.services.runs.results import (
    ANSWERED,
    CACHEABLE,
    ERROR,
    FLUSH_RESULTS,
    FLUSH_SECONDS,
    OK,
    PARSE_ERROR,
    _ResultWriter,
)
from judging.services.runs.start import (
    BLOCKING_SETTINGS,
    check_judge_runs_here,
    missing_key_variable,
    needs_endpoint,
    quick_check,
    start_or_reuse_run,
    start_run,
)
from judging.services.runs.summary import latest_judgements, run_summary, sample_label
from judging.services.runs.targets import CHUNK, Target, target_queryset

__all__ = [
    "ANSWERED",
    "BLOCKING_SETTINGS",
    "CACHEABLE",
    "CHUNK",
    "ERROR",
    "FLUSH_RESULTS",
    "FLUSH_SECONDS",
    "NLI_CHUNK",
    "OK",
    "PARSE_ERROR",
    "SLICE_SECONDS",
    "RunCancelled",
    "RunFailed",
    "Target",
    "_ResultWriter",
    "cancel_run",
    "check_judge_runs_here",
    "execute_new_run",
    "execute_run",
    "execution_lock",
    "is_run_executing",
    "latest_judgements",
    "missing_key_variable",
    "needs_endpoint",
    "quick_check",
    "resume_stale_runs",
    "run_summary",
    "sample_label",
    "start_or_reuse_run",
    "start_run",
    "target_queryset",
]
