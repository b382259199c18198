"""Creating a round: write a plan drawn by the funnel in one transaction, and say what it leaves unfinished.

``create_round`` checks the round asked for may still be drawn (``refusals``), plans it with the funnel, checks the
selected items are still in the pool, closes the previous open round, stores the detector trained for the round and
opens the items to the annotators. ``unfinished_open_round`` is what the wizard and the command warn about first.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, F, Sum
from django.utils import timezone

from annotate.models import PairItem, PairRound, Project
from annotate.services.pairs import detector as detection
from annotate.services.pairs.config import get_config
from annotate.services.pairs.detector import RoundRefused
from annotate.services.pairs.funnel import (
    DEFAULT_DROP_FRACTION,
    DEFAULT_PARAPHRASE_MAX,
    RoundPlan,
    next_round_number,
    preview_round,
)
from annotate.services.pairs.rounds.refusals import _stale_number, round_job_busy
from annotate.services.planner import analyze_after_commit

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
    analyze_after_commit(PairItem, PairRound)  # every drawn item changed state: the queue's plans need it
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
