"""Model-in-the-loop rounds of a pairs project: create a round, run the round job, report how it went.

What a round draws, and why, is the funnel's business
(annotate.services.pairs.funnel, which documents the steps and whose names are
re-exported here). This module writes the plan: ``create_round`` checks the
selected items are still in the pool, closes the previous open round, stores
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

import logging
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, F, Q, QuerySet, Sum, Value
from django.db.models.functions import Least
from django.utils import timezone
from django.utils.timesince import timesince

from annotate.models import Job, PairItem, PairRound, Project
from annotate.services.pairs import detector as detection
from annotate.services.pairs import vectors
from annotate.services.pairs.config import get_config
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
    # This module's own.
    "BALANCE_UNDEFINED",
    "METRIC_UNDEFINED",
    "create_round",
    "create_round_from_plan",
    "round_report",
    "run_round_job",
    "start_round_job",
    "unfinished_open_round",
    "active_round_job",
    "round_job_busy",
    "CancelRefused",
    "RoundJobWait",
    "cancel_round_job",
    "round_job_wait",
]

log = logging.getLogger(__name__)

UPDATE_BATCH = 500


def create_round(
    project: Project,
    user: AbstractBaseUser | None,
    *,
    size: int,
    low: float,
    high: float,
    paraphrase_max: float = DEFAULT_PARAPHRASE_MAX,
    drop_fraction: float = DEFAULT_DROP_FRACTION,
    seed: int | None = None,
    number: int | None = None,
    from_job: bool = False,
) -> PairRound:
    """Draw round ``number`` and open it to the project's annotators, in one transaction.

    The previous open round is closed (its items stay as they are; they are no
    longer served). Raises RoundRefused with the plan's refusal, having changed
    nothing. A detector trained for the round is stored with it.

    ``number`` is the round the caller asked for: when another round became the
    next one meanwhile (a second admin's round), the call is refused instead of
    drawing the round after, which would close a round nobody has judged yet.
    None (the demo, benchmarks and scripts that own the project) draws the next
    round, whatever it is. A call from outside a round job (the command) is
    refused too while a round job of the project is queued or running; a
    job's own number is what keeps it from drawing a round after another's.
    """
    with transaction.atomic():
        # One round at a time per project: a second call waits here, then sees what the first one wrote.
        Project.objects.select_for_update().filter(pk=project.pk).exists()
        busy = None if from_job else round_job_busy(project)
        if busy is not None:
            raise RoundRefused(busy)
        stale = _stale_number(project, number)
        if stale is not None:
            raise RoundRefused(stale)
        plan = preview_round(project, size=size, low=low, high=high, paraphrase_max=paraphrase_max,
                             drop_fraction=drop_fraction, seed=seed)
        if plan.refusal is not None:
            raise RoundRefused(plan.refusal)
        return _write_round(project, user, plan, size)


def active_round_job(project: Project) -> Job | None:
    """The project's round job that is queued or running (the oldest); None if none."""
    return (Job.objects.filter(project=project, kind=Job.Kind.PAIR_ROUND,
                               status__in=[Job.Status.QUEUED, Job.Status.RUNNING])
            .select_related("created_by").order_by("created_at", "id").first())


def round_job_busy(project: Project) -> str | None:
    """Why no round may start now: a round job of the project is queued or running; None when none is."""
    busy = active_round_job(project)
    if busy is None:
        return None
    number = busy.options.get("number") or next_round_number(project)
    starter = f", started by {busy.created_by.get_username()}" if busy.created_by else ""
    return f"Round {number} is being created (job {busy.pk}{starter}); wait for it."


def _stale_number(project: Project, number: int | None) -> str | None:
    """Why round ``number`` can no longer be drawn (another round is the next one now); None when it can."""
    if number is None:
        return None
    expected = next_round_number(project)
    if number == expected:
        return None
    existing = PairRound.objects.filter(project=project, number=number).select_related("created_by").first()
    if existing is None:
        return f"Round {number} is not the next round (round {expected} is); open the wizard again."
    return f"Round {number} was created meanwhile {_created_by(existing)}; open the wizard again."


def stale_wizard_refusal(project: Project, submitted: int, showing: int) -> str | None:
    """The refusal of a wizard submitted for round ``submitted`` when the page now plans round ``showing``, worded
    for the wizard that shows it (the page already holds round ``showing``'s form and preview, so "open the wizard
    again" would send the admin where they are); None when ``submitted`` is still the next round."""
    if submitted == showing:
        return None
    now_plans = f"This wizard now plans round {showing}: check the preview, then create it."
    existing = PairRound.objects.filter(project=project, number=submitted).select_related("created_by").first()
    if existing is None:
        return f"Round {submitted} is not the next round. {now_plans}"
    return f"Round {submitted} was created meanwhile ({_drawn_by(existing)}). {now_plans}"


def _drawn_by(pair_round: PairRound) -> str:
    """Who drew a round, in a parenthesis's words: its job and who started it, the admin, or the command line."""
    job = (Job.objects.filter(project_id=pair_round.project_id, kind=Job.Kind.PAIR_ROUND,
                              options__round_id=pair_round.pk).select_related("created_by").order_by("id").first())
    starter = (job.created_by if job is not None else None) or pair_round.created_by
    by = f"by {starter.get_username()}" if starter is not None else ""
    if job is not None:
        return f"job {job.pk}, {by}" if by else f"job {job.pk}"
    return by or "outside the wizard: the pairs_round command or a script"


def _created_by(pair_round: PairRound) -> str:
    """Who drew a round, in words: its job, else the admin, else the command line or a script."""
    job = (Job.objects.filter(project_id=pair_round.project_id, kind=Job.Kind.PAIR_ROUND,
                              options__round_id=pair_round.pk).order_by("id").first())
    if job is not None:
        return f"by job {job.pk}"
    if pair_round.created_by is not None:
        return f"by {pair_round.created_by.get_username()}"
    return "outside the wizard (the pairs_round command or a script)"


def _write_round(project: Project, user: AbstractBaseUser | None, plan: RoundPlan, size: int) -> PairRound:
    began = time.perf_counter()
    config = get_config(project)
    ids = [item_id for item_id, _ in plan.selected]
    still_in_pool = 0
    for at in range(0, len(ids), UPDATE_BATCH):
        still_in_pool += len(
            PairItem.objects.select_for_update()
            .filter(pk__in=ids[at : at + UPDATE_BATCH], state=PairItem.State.POOL)
            .values_list("pk", flat=True)
        )
    if still_in_pool != len(ids):
        raise RoundRefused(
            f"{len(ids) - still_in_pool} of the {len(ids)} selected items left the pool while the round was "
            "planned; preview the round again."
        )
    now = timezone.now()
    PairRound.objects.filter(project=project, status=PairRound.Status.OPEN).update(
        status=PairRound.Status.CLOSED, closed_at=now
    )
    stored_detector = None
    if plan.head is not None and plan.training is not None and plan.detector is not None:
        stored_detector = detection.save_detector(
            project, plan.detector["number"], plan.detector["encoder"], plan.head, plan.training, plan.train_seconds
        )
    pair_round = PairRound.objects.create(
        project=project, number=plan.number, size=size, seed=plan.seed, filters=plan.filters, funnel=plan.funnel,
        ratio=plan.ratio_dict() if plan.number > 1 else {"R": None, "action": None, "counts_from": None,
                                                         "seed": plan.seed, "reason": "Round 1 is drawn at random."},
        promised_h_share=plan.promised_h_share, detector=stored_detector, created_by=user,
    )
    PairItem.objects.bulk_update(
        [
            PairItem(pk=item_id, round=pair_round, state=PairItem.State.OPEN, judges_needed=config.judges_per_item,
                     taken=0, selection=selection)
            for item_id, selection in plan.selected
        ],
        ["round", "state", "judges_needed", "taken", "selection"],
        batch_size=UPDATE_BATCH,
    )
    plan.timings["write"] = time.perf_counter() - began
    log.info("pairs round %s of %s: %s items drawn", plan.number, project.slug, len(ids))
    return pair_round


def create_round_from_plan(project: Project, user: AbstractBaseUser | None, plan: RoundPlan, size: int) -> PairRound:
    """Write a plan made by ``preview_round`` (same process, moments ago); the benchmark times the two apart.

    Raises RoundRefused when the plan was refused, when a round was created
    since, or when its items left the pool meanwhile.
    """
    if plan.refusal is not None:
        raise RoundRefused(plan.refusal)
    if plan.reused_scores:
        # Its detector was kept from an earlier preview, without the items it was trained on: train for real.
        raise RoundRefused("This plan reused an earlier preview's detector; plan the round afresh to create it.")
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).exists()
        busy = round_job_busy(project)
        if busy is not None:
            raise RoundRefused(busy)
        if next_round_number(project) != plan.number:
            raise RoundRefused(f"Round {plan.number} was created meanwhile; preview the next round again.")
        return _write_round(project, user, plan, size)


# --- background job ----------------------------------------------------------------------------------------

ROUND_PARAMETERS = ("size", "low", "high", "paraphrase_max", "drop_fraction", "seed")


def start_round_job(project: Project, user: AbstractBaseUser | None, *, number: int | None = None,
                    **params: Any) -> Job:
    """A PAIR_ROUND job drawing round ``number`` with the wizard's parameters, queued on commit; it computes missing
    vectors first.

    ``number`` is the next round when the admin submitted (None: the next one now); the job's options keep it, so
    the job draws that round or nothing. Raises RoundRefused, starting nothing, while another round job of the
    project is queued or running, or when ``number`` is no longer the next round: both are checked under the
    project's row lock, so two admins submitting at once get one job. The seed is fixed here when not given, so a
    rerun of the job draws the same round.
    """
    from annotate.tasks import create_pair_round

    unknown = sorted(set(params) - set(ROUND_PARAMETERS))
    if unknown:
        raise ValueError(f"unknown round parameters {unknown}; expected some of {list(ROUND_PARAMETERS)}")
    options = {"size": DEFAULT_SIZE, "low": DEFAULT_LOW, "high": DEFAULT_HIGH,
               "paraphrase_max": DEFAULT_PARAPHRASE_MAX, "drop_fraction": DEFAULT_DROP_FRACTION, **params}
    if options.get("seed") is None:
        options["seed"] = secrets.randbelow(2**31)
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).exists()
        busy = round_job_busy(project)
        if busy is not None:
            raise RoundRefused(busy)
        stale = _stale_number(project, number)
        if stale is not None:
            raise RoundRefused(stale)
        options["number"] = next_round_number(project) if number is None else number
        job = Job.objects.create(project=project, kind=Job.Kind.PAIR_ROUND, total=1, created_by=user,
                                 options=options)
        transaction.on_commit(lambda: create_pair_round.delay(job.pk))
    return job


def run_round_job(job_id: int) -> Job:
    """Compute the missing span vectors (rounds after the first), then create the round; progress on the job row.

    A refusal marks the job failed with its message (nothing else changes),
    among them a round number that is no longer the next one: the job draws the
    round it was started for or none. The round and the job's "done" are
    written in one transaction, so a task run again after a stop never draws a
    second round. A job cancelled by an admin (``cancel_round_job``) draws
    nothing and keeps the cancel's message: every write of the job's status
    below applies only while the job is still queued or running, and the round
    is written only if the job's row, locked in that transaction, is still
    running.
    """
    job = Job.objects.select_related("project", "created_by").get(pk=job_id)
    if job.status in (Job.Status.DONE, Job.Status.FAILED):
        return job
    project = job.project
    if PairRound.objects.filter(pk=job.options.get("round_id"), project=project).exists():
        # This job's round exists already (it is written with the job's "done"): never draw a second one.
        Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE, done=F("total"), finished_at=timezone.now())
        job.refresh_from_db()
        return job
    params = {name: job.options[name] for name in ROUND_PARAMETERS if name in job.options}
    number = job.options.get("number")  # None for a job queued before jobs recorded their round
    # When this attempt started, for the page's "running for"; kept in the options (which the "done" write keeps).
    job.options = {**job.options, "started_at": timezone.now().isoformat()}
    if not _active(job.pk).update(status=Job.Status.RUNNING, error="", options=job.options):
        job.refresh_from_db()  # cancelled between the read above and now
        return job
    try:
        stale = _stale_number(project, number)
        if stale is not None:
            # Checked again under the project's lock in create_round; here it spares computing vectors for nothing.
            raise RoundRefused(stale)
        total = 1
        if next_round_number(project) > 1:
            encoder = vectors.encoder_name(project)
            missing = vectors.stale_items(project, encoder).count()
            total = missing + 1
            _active(job.pk).update(total=total, done=0)

            def progress(written: int) -> None:
                # A cancel stops the work after the chunk just written (the vectors written so far are kept).
                if not _active(job.pk).update(done=Least(F("done") + written, Value(total - 1))):
                    raise _JobEnded

            vectors.compute_vectors(project, encoder=encoder, progress=progress)
        with transaction.atomic():
            # The project's lock first (create_round takes it too), then the job's: a cancel that committed before
            # this point is seen here, and one that comes later waits for this transaction and finds the job done.
            Project.objects.select_for_update().filter(pk=project.pk).exists()
            if not Job.objects.select_for_update().filter(pk=job.pk, status=Job.Status.RUNNING).exists():
                raise _JobEnded
            pair_round = create_round(project, job.created_by, number=number, from_job=True, **params)
            Job.objects.filter(pk=job.pk).update(
                status=Job.Status.DONE, total=total, done=total, finished_at=timezone.now(),
                options={**job.options, "round": pair_round.number, "round_id": pair_round.pk},
            )
    except _JobEnded:
        log.info("pairs round job %s was cancelled while it ran: no round drawn", job.pk)
    except RoundRefused as refusal:
        _active(job.pk).update(status=Job.Status.FAILED, error=str(refusal), finished_at=timezone.now())
    except Exception as error:
        log.exception("pairs round job %s failed", job.pk)
        _active(job.pk).update(status=Job.Status.FAILED, error=str(error), finished_at=timezone.now())
        raise
    job.refresh_from_db()
    return job


class _JobEnded(Exception):
    """The job was cancelled while it ran: it draws nothing, and its row keeps the cancel's status and message."""


def _active(job_id: int) -> QuerySet[Job]:
    """The job's row while it is queued or running: a write through it leaves a cancelled (or ended) job as it is."""
    return Job.objects.filter(pk=job_id, status__in=[Job.Status.QUEUED, Job.Status.RUNNING])


# --- cancelling a round job --------------------------------------------------------------------------------

# A worker picks a queued job up within seconds; queued longer than this, the pages say no worker may be running.
NO_WORKER_AFTER = timedelta(minutes=1)


class CancelRefused(Exception):
    """A round job that has already ended cannot be cancelled; the message says how it ended. Nothing was changed."""


@dataclass(frozen=True)
class RoundJobWait:
    """How long an active round job has waited: queued since it was created, running since its attempt began."""

    status: str
    since: datetime
    seconds: float
    no_worker: bool  # queued for longer than NO_WORKER_AFTER: no worker may be running

    @property
    def duration(self) -> str:
        """The wait in words: seconds under a minute (the job's page polls every second), else minutes, hours..."""
        if self.seconds < 60:
            whole = int(self.seconds)
            return f"{whole} second{'' if whole == 1 else 's'}"
        return timesince(self.since, self.since + timedelta(seconds=self.seconds))


def round_job_wait(job: Job, now: datetime | None = None) -> RoundJobWait | None:
    """How long ``job`` has been queued or running, for the pages; None once it has ended."""
    if not job.is_active:
        return None
    now = now or timezone.now()
    since = job.created_at
    if job.status == Job.Status.RUNNING and job.options.get("started_at"):
        since = datetime.fromisoformat(job.options["started_at"])
    waited = now - since
    return RoundJobWait(status=job.status, since=since, seconds=max(0.0, waited.total_seconds()),
                        no_worker=job.status == Job.Status.QUEUED and waited > NO_WORKER_AFTER)


def cancel_round_job(job: Job, user: AbstractBaseUser) -> Job:
    """Mark a queued or running round job failed, "Cancelled by <user> at <time>", so a new round can be started.

    A job stuck in "queued" (no worker ran it) or "running" (its worker died)
    otherwise blocks every later round of the project (``round_job_busy``). The
    job draws no round afterwards: ``run_round_job`` checks the job's row,
    locked, in the transaction that would write the round. The job's row is
    locked here too, so a cancel that comes while the round is being written
    waits for it and is then refused. Raises CancelRefused, changing nothing,
    when the job has already ended. Who and when are also kept in the job's
    options (``cancelled_by``, ``cancelled_at``). Returns ``job``, updated.
    """
    with transaction.atomic():
        locked = Job.objects.select_for_update().get(pk=job.pk, kind=Job.Kind.PAIR_ROUND)
        if not locked.is_active:
            raise CancelRefused(_ended_in_words(locked))
        now = timezone.now()
        who = user.get_username()
        locked.status = Job.Status.FAILED
        locked.error = f"Cancelled by {who} at {timezone.localtime(now):%Y-%m-%d %H:%M:%S %Z}."
        locked.finished_at = now
        locked.options = {**locked.options, "cancelled_by": who, "cancelled_at": now.isoformat()}
        locked.save(update_fields=["status", "error", "finished_at", "options"])
    log.info("pairs round job %s of project %s cancelled by %s", locked.pk, locked.project_id, who)
    for name in ("status", "error", "finished_at", "options"):
        setattr(job, name, getattr(locked, name))
    return job


def _ended_in_words(job: Job) -> str:
    """Why an ended job cannot be cancelled: how it ended, and that nothing was changed."""
    if job.status == Job.Status.DONE:
        drawn = f"it drew round {job.options['round']}" if job.options.get("round") else "it has finished"
        return f"Job {job.pk} is done ({drawn}); there is nothing to cancel and nothing was changed."
    if job.options.get("cancelled_by"):
        return f"Job {job.pk} was already cancelled ({job.error}); nothing was changed."
    return f"Job {job.pk} has already failed ({job.error or 'no reason recorded'}); nothing was changed."


# --- report --------------------------------------------------------------------------------------------------

# Why a metric of the HaDes tables is undefined (annotate.pairmath.metrics gives None), by its key. The round page
# and the API give these reasons: the service says why, so the two cannot word it differently. ``n`` is never None
# once there are metrics (``metrics_reason`` says why there are none).
METRIC_UNDEFINED = {
    "accuracy": "no item to score",
    "precision_h": "the detector predicted no item H",
    "recall_h": "no consensus item of the round is H",
    "f1_h": "no item is H or predicted H",
    "precision_n": "the detector predicted no item N",
    "recall_n": "no consensus item of the round is N",
    "f1_n": "no item is N or predicted N",
    "g_mean": "it needs the recall of both classes",
    "auc": "it needs both H and N items",
    "brier": "no item to score",
}
# Why a figure of the round's H/N balance is undefined, by its key in the report's ``balance``.
BALANCE_UNDEFINED = {
    "h_share": "no item of this round has reached consensus yet",
    "promised_h_share": "nothing promised: the round was drawn at random or without subsampling counts",
}


def _undefined(figures: dict[str, Any] | None, reasons: dict[str, str]) -> dict[str, str]:
    """The reason of each figure that is None; none when there are no figures at all (another field says why)."""
    if not figures:
        return {}
    return {key: reason for key, reason in reasons.items() if figures.get(key) is None}


def unfinished_open_round(project: Project) -> dict[str, Any] | None:
    """The open round's items still being judged, which creating the next round leaves unfinished; None if none.

    ``create_round`` closes the open round, and the queue serves only items of
    an open round, so these items keep the answers they have and never reach a
    decision (no consensus label, left out of the agreement figures). The
    wizard and the command say so before an admin creates the round.
    ``{"round", "items", "answers_missing", "message"}``.
    """
    open_round = PairRound.objects.filter(project=project, status=PairRound.Status.OPEN).order_by("-number").first()
    if open_round is None:
        return None
    waiting = PairItem.objects.filter(round=open_round, state=PairItem.State.OPEN).aggregate(
        items=Count("id"), needed=Sum("judges_needed"), answered=Sum(F("votes_h") + F("votes_n") + F("votes_unsure")),
    )
    if not waiting["items"]:
        return None
    items, missing = waiting["items"], max(0, (waiting["needed"] or 0) - (waiting["answered"] or 0))
    message = (
        f"Round {open_round.number} is still open: {items} of its items {'is' if items == 1 else 'are'} being "
        f"judged ({missing} answer{'' if missing == 1 else 's'} missing). Creating round {open_round.number + 1} "
        f"closes round {open_round.number}: those items are no longer served and stay without a decision "
        "(no consensus label, left out of the agreement figures)."
    )
    return {"round": open_round.number, "items": items, "answers_missing": missing, "message": message}


def round_report(pair_round: PairRound) -> dict[str, Any]:
    """How a round went: its items by state, the selecting detector's metrics on its consensus items, the balance.

    The metrics are those of the detector that selected the round (trained
    before any of its items were judged) on the round's consensus items, so they
    are held-out figures. ``balance`` puts the share of H reached among the
    consensus items beside the share the subsampling promised. A figure that is
    None has its reason under ``metrics_undefined`` or ``balance_undefined``
    (same key); ``metrics_reason`` says why there are no metrics at all, or
    which consensus items they leave out.
    """
    from annotate.pairmath.metrics import detector_metrics

    states = dict(
        PairItem.objects.filter(round=pair_round).values_list("state").annotate(n=Count("id")).order_by()
    )
    consensus = PairItem.objects.filter(round=pair_round, state=PairItem.State.CONSENSUS)
    labels = consensus.aggregate(h=Count("id", filter=Q(label="H")), n=Count("id", filter=Q(label="N")))
    h, n = labels["h"], labels["n"]
    report: dict[str, Any] = {
        "round": pair_round.number,
        "status": pair_round.status,
        "size": pair_round.size,
        "drawn": sum(states.values()),
        "states": {state: states.get(state, 0) for state, _ in PairItem.State.choices},
        "detector": None,
        "metrics": None,
        "metrics_reason": None,
        "balance": {
            "h": h, "n": n, "h_share": h / (h + n) if h + n else None,
            "promised_h_share": pair_round.promised_h_share,
        },
        "ratio": pair_round.ratio,
        "funnel": pair_round.funnel,
        "metrics_undefined": {},
    }
    report["balance_undefined"] = _undefined(report["balance"], BALANCE_UNDEFINED)
    detector = pair_round.detector
    if detector is None:
        report["metrics_reason"] = (
            "No detector selected this round (round 1 is drawn at random), so there is nothing to evaluate."
            if pair_round.number == 1 else "The detector that selected this round was deleted."
        )
        return report
    report["detector"] = {"number": detector.number, "encoder": detector.encoder,
                          "trained_on": detector.trained_on, "trained_h": detector.trained_h}
    rows = list(consensus.filter(vector_model=detector.encoder, vector__isnull=False)
                .order_by("pk").values_list("label", "vector"))
    without_vector = h + n - len(rows)
    if not rows:
        report["metrics_reason"] = (
            "No consensus item of this round yet." if h + n == 0 else
            f"None of the {h + n} consensus items has a span vector from {detector.encoder!r}."
        )
        return report
    head = detection.load_head(detector)
    p_h = head.p_h(detection.decode_vectors([vector for _, vector in rows]))
    report["metrics"] = detector_metrics([1 if label == "H" else 0 for label, _ in rows], p_h.tolist())
    report["metrics_undefined"] = _undefined(report["metrics"], METRIC_UNDEFINED)
    if without_vector:
        report["metrics_reason"] = (f"{without_vector} of the {h + n} consensus items have no span vector from "
                                    f"{detector.encoder!r} and are left out.")
    return report
