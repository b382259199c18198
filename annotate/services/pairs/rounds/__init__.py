"""Model-in-the-loop rounds of a pairs project: create a round, run the round job, report how it went.

What a round draws, and why, is the funnel's business
(annotate.services.pairs.funnel, which documents the steps and whose names are
re-exported here). The package's modules, re-exported here for the views, the
command, the tasks and the tests: ``refusals`` (why a round may not be drawn
now), ``create`` (writing a round), ``job`` (the background round job),
``cancel`` (a job's wait, and cancelling it) and ``report``.
``create_round`` checks the selected items are still in the pool, closes the previous open round, stores
the detector trained for the round and opens the items to the annotators, in
one transaction. ``start_round_job`` / ``run_round_job`` do the same in the
background after computing missing span vectors, and ``round_report`` says how
a round went.

Two admins (or an admin and the ``pairs_round`` command) may start a round at
the same moment. A round is always asked for by its number (the next one when
the admin submitted, kept in the job's options): starting is refused while
another round job of the project is queued or running, and a job or call whose
number is no longer the next one draws nothing. Both checks run under the
project's row lock, so two requests cannot both pass them; without them the
second job drew round 3 right after round 2 and closed round 2 with its items
undecided.

A round job that no worker runs (none started, or it died) would block every
later round: a project admin may cancel a queued or running job
(``cancel_round_job``). The job then fails with who cancelled it and when, and
draws no round even if a worker picks it up afterwards: the job's row is read
again, locked, in the transaction that writes the round.
"""

from __future__ import annotations

from annotate.services.pairs.detector import RoundRefused
from annotate.services.pairs.funnel import (
    BAND,
    DATE_NAME,
    DEFAULT_DROP_FRACTION,
    DEFAULT_HIGH,
    DEFAULT_LOW,
    DEFAULT_PARAPHRASE_MAX,
    DEFAULT_SIZE,
    PARAPHRASE,
    POOL,
    SELECTED,
    SUBSAMPLING,
    RoundPlan,
    next_round_number,
    preview_round,
)
from annotate.services.pairs.rounds.cancel import (
    NO_WORKER_AFTER,
    CancelRefused,
    RoundJobWait,
    cancel_round_job,
    round_job_wait,
)
from annotate.services.pairs.rounds.create import create_round, create_round_from_plan, unfinished_open_round
from annotate.services.pairs.rounds.job import ROUND_PARAMETERS, run_round_job, start_round_job
from annotate.services.pairs.rounds.refusals import active_round_job, round_job_busy, stale_wizard_refusal
from annotate.services.pairs.rounds.report import BALANCE_UNDEFINED, METRIC_UNDEFINED, round_report

__all__ = [
    # Re-exported from the funnel and the detector, for the views, the command, the tasks and the tests.
    "BAND",
    "DATE_NAME",
    "DEFAULT_DROP_FRACTION",
    "DEFAULT_HIGH",
    "DEFAULT_LOW",
    "DEFAULT_PARAPHRASE_MAX",
    "DEFAULT_SIZE",
    "PARAPHRASE",
    "POOL",
    "SELECTED",
    "SUBSAMPLING",
    "RoundPlan",
    "RoundRefused",
    "next_round_number",
    "preview_round",
    # The package's own.
    "BALANCE_UNDEFINED",
    "METRIC_UNDEFINED",
    "NO_WORKER_AFTER",
    "ROUND_PARAMETERS",
    "create_round",
    "create_round_from_plan",
    "round_report",
    "run_round_job",
    "start_round_job",
    "stale_wizard_refusal",
    "unfinished_open_round",
    "active_round_job",
    "round_job_busy",
    "CancelRefused",
    "RoundJobWait",
    "cancel_round_job",
    "round_job_wait",
]
