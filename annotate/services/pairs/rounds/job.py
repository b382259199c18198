"""The background round job: ``start_round_job`` queues a PAIR_ROUND job, ``run_round_job`` (the Celery task's
body) computes the missing span vectors, then creates the round; progress and the outcome are on the job's row.

A job draws the round it was started for or none, and a job cancelled meanwhile (``cancel.cancel_round_job``) draws
nothing: every write of its status applies only while it is still queued or running.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, QuerySet, Value
from django.db.models.functions import Least
from django.utils import timezone

from annotate.models import Job, PairRound, Project
from annotate.services import jobs
from annotate.services.pairs import vectors
from annotate.services.pairs.detector import RoundRefused
from annotate.services.pairs.funnel import (
    DEFAULT_DROP_FRACTION,
    DEFAULT_HIGH,
    DEFAULT_LOW,
    DEFAULT_PARAPHRASE_MAX,
    DEFAULT_SIZE,
    next_round_number,
)
from annotate.services.pairs.rounds.create import create_round
from annotate.services.pairs.rounds.refusals import _stale_number, round_job_busy

log = logging.getLogger(__name__)

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
        jobs.queue_job(job, create_pair_round)  # a refused send fails the job, saying why (job.error)
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
    running. One process at a time per job (its lock): a second delivery while the first runs returns at once.
    """
    with jobs.job_lock(job_id) as held:
        job = Job.objects.select_related("project", "created_by").get(pk=job_id)
        if not held or job.status in (Job.Status.DONE, Job.Status.FAILED):
            return job
        _run_round_job(job)
    if job.status == Job.Status.DONE:
        jobs.forget_job_lock(job.pk)
    return job


def _run_round_job(job: Job) -> None:
    """Draw the job's round (see ``run_round_job``); ``job`` is read back from its row when it ends here."""
    project = job.project
    if PairRound.objects.filter(pk=job.options.get("round_id"), project=project).exists():
        # This job's round exists already (it is written with the job's "done"): never draw a second one.
        Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE, done=F("total"), finished_at=timezone.now())
        job.refresh_from_db()
        return
    params = {name: job.options[name] for name in ROUND_PARAMETERS if name in job.options}
    number = job.options.get("number")  # None for a job queued before jobs recorded their round
    # When this attempt started, for the page's "running for"; kept in the options (which the "done" write keeps).
    job.options = {**job.options, "started_at": timezone.now().isoformat()}
    if not _active(job.pk).update(status=Job.Status.RUNNING, error="", options=job.options):
        job.refresh_from_db()  # cancelled between the read above and now
        return
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
        jobs.mark_failed(job.pk, str(refusal), only_if_active=True)
    except Exception as error:
        log.exception("pairs round job %s failed", job.pk)
        jobs.mark_failed(job.pk, str(error), only_if_active=True)
        raise
    job.refresh_from_db()


class _JobEnded(Exception):
    """The job was cancelled while it ran: it draws nothing, and its row keeps the cancel's status and message."""


def _active(job_id: int) -> QuerySet[Job]:
    """The job's row while it is queued or running: a write through it leaves a cancelled (or ended) job as it is."""
    return Job.objects.filter(pk=job_id, status__in=[Job.Status.QUEUED, Job.Status.RUNNING])
