"""Answering: recording a judgement (alone or with the next serve), undoing the last one, and progress."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F

from annotate.models import PairConfig, PairItem, PairJudgement, PairRound, Project
from annotate.services.clock import elapsed_seconds
from annotate.services.pairs.config import loaded_config
from annotate.services.pairs.queue import locks
from annotate.services.pairs.queue.errors import (
    AlreadyJudged,
    BadLabel,
    NoSuchItem,
    NothingToUndo,
    NotServed,
    RoundClosed,
    ServeExpired,
)
from annotate.services.pairs.queue.locks import (
    _ANSWER_SQL,
    _ITEMS_LEFT_SQL,
    _OUTCOME_SQL,
    _candidate_params,
    _db_moment,
    _Judge,
    _judgements_of,
    _lock_judge,
    _sql_rows,
    _sql_rows_written,
    lock_rows,
)
from annotate.services.pairs.queue.outcome import _RECOMPUTED_FIELDS, recompute_item
from annotate.services.pairs.queue.serving import (
    _AllHeld,
    _claim_next,
    _drop_serve,
    _held_serve,
    _release_expired,
    _serve,
    _show,
    _with_counters,
    _with_texts,
)

LABELS = ("H", "N", "?")


def _check_label(label: Any) -> str:
    if not isinstance(label, str) or label not in LABELS:
        raise BadLabel(f"{label!r} is not a label; answer one of {', '.join(LABELS)} "
                       "(H hallucination, N not hallucination, ? cannot determine)")
    return label


def _answer(project: Project, user: Any, config: PairConfig, item_id: int, label: str) -> PairJudgement:
    """Fill the label of the judge's serve of the item and decide the item (inside the caller's transaction)."""
    judgement = (
        # The item's round comes along (not locked): an answer to an item of a closed round is refused below.
        lock_rows(_with_counters(PairJudgement.objects, with_round=True), of=("self", "item"))
        .filter(item_id=item_id, item__project=project, judge=user)
        .first()
    )
    if judgement is None:
        if not PairItem.objects.filter(pk=item_id, project=project).exists():
            raise NoSuchItem(f"project {project.slug!r} has no pair item {item_id}")
        raise NotServed(f"item {item_id} was not served to you; ask for your next item and answer that one")
    item = judgement.item
    if judgement.answered_at is not None:
        raise AlreadyJudged(
            f"you already judged item {item_id} as {judgement.label}, and an item is judged once per judge: to "
            "change your answer, undo it while it is your last one (u on the labeling page, POST "
            f"/api/pairs/undo/?project={project.slug}) and answer again",
            judgement=judgement,
        )
    closed = item.round
    if closed is not None and closed.status != PairRound.Status.OPEN:
        # The round's tallies are final once the next round closed it (undo refuses for the same reason): an
        # answer to a serve still on screen would change a closed round's consensus and its reported balance.
        raise RoundClosed(
            f"item {item_id} belongs to round {closed.number}, which was closed when round {closed.number + 1} "
            "was created; your answer was not recorded."
        )
    if not judgement.counted:
        # Released after serve_minutes: take a slot again if the item still has one.
        room = item.state == PairItem.State.OPEN and PairItem.objects.filter(
            pk=item.pk, state=PairItem.State.OPEN, taken__lt=F("judges_needed")
        ).update(taken=F("taken") + 1)
        if not room:
            raise ServeExpired(
                f"your serve of item {item_id} expired after {config.serve_minutes} minutes and its slot went to "
                "another judge; your answer was not recorded."
            )
        item.taken += 1
        judgement.counted = True
    moment = locks.now()
    judgement.label = label
    judgement.answered_at = moment
    judgement.seconds = elapsed_seconds(judgement.served_at, moment)
    _sql_rows_written(_ANSWER_SQL, [label, _db_moment(moment), judgement.seconds, judgement.counted, judgement.pk])
    recompute_item(item, config)
    _sql_rows_written(_OUTCOME_SQL, [item.votes_h, item.votes_n, item.votes_unsure, item.state, item.label,
                                     item.judges_needed, item.pk])
    return judgement


def _check_spam(project: Project, user: Any, config: PairConfig, judge: _Judge) -> None:
    """The spammer rules, once the judge has enough answers for them to apply."""
    if judge.answered >= config.min_judgements:
        from annotate.services.pairs.flags import check_judge

        check_judge(project, user, has_flags=judge.has_flags)


def record_judgement(project: Project, user: AbstractBaseUser, item_id: int, label: str) -> PairJudgement:
    """Record the judge's answer on an item served to them; the item is decided again and the spam rules run."""
    label = _check_label(label)
    config = loaded_config(project)
    with transaction.atomic():
        judge = _lock_judge(project, user)
        judgement = _answer(project, user, config, item_id, label)
        judge.answered += 1
        _check_spam(project, user, config, judge)
    return judgement


@dataclass
class Answered:
    """An answer and what the judge sees next, from one transaction (the API's answer-and-next)."""

    judgement: PairJudgement
    next: PairJudgement | None
    progress: dict[str, int] = field(default_factory=dict)
    # False for a retry of an answer that stands (same judge, item and label): nothing was written this time.
    recorded: bool = True


def record_and_serve_next(project: Project, user: AbstractBaseUser, item_id: int, label: str) -> Answered:
    """record_judgement, then serve_next_item, and the judge's progress: the API's answer-and-next.

    One transaction under one lock of the judge. Once the answered item is
    locked nothing in it waits for a row another transaction holds (expired
    serves and candidates that others hold are skipped), so two judges
    answering at once cannot deadlock. In the rare moment when every
    candidate is held by others, the answer commits first and the next item
    is then claimed as ``serve_next_item`` does, waiting for one.

    A retry of an answer that stands (the same label on an item the judge
    answered, not undone since) records nothing: it returns that answer, with
    its first ``seconds`` and ``answered_at``, and the judge's current next
    item and progress, with ``recorded`` False. A client whose connection
    dropped after the server recorded the answer learns it got through; a
    different label is still ``AlreadyJudged``.
    """
    label = _check_label(label)
    config = loaded_config(project)
    following: PairJudgement | None = None
    try:
        with transaction.atomic():
            judge = _lock_judge(project, user)
            judgement = _answer(project, user, config, item_id, label)
            judge.answered += 1
            _check_spam(project, user, config, judge)
            if judge.held_id == judgement.pk:
                judge.held_id = None
            moment = locks.now()
            if judge.expired:
                _release_expired(project, config, moment)
            following = _held_serve(judge)
            all_held = False
            if following is None:
                try:
                    following = _claim_next(project, user, moment, may_wait=False)
                except _AllHeld:
                    all_held = True
    except AlreadyJudged as refusal:  # raised before anything was written: the rollback undoes nothing
        standing = _standing_answer(refusal, label)
        if standing is None:
            raise
        return _repeated_answer(project, user, config, standing)
    # Reads after the commit: the items' locks are held no longer than the writes need.
    if all_held:
        following, judge = _serve(project, user, config)
    return Answered(judgement, _show(following), {"answered": judge.answered, "left": _items_left(project, user)})


def _standing_answer(refusal: AlreadyJudged, label: str) -> PairJudgement | None:
    """The judge's recorded answer when ``label`` repeats it and it still counts; None when the retry differs."""
    standing = refusal.judgement
    if standing is None or standing.label != label or not standing.counted or standing.answered_at is None:
        return None
    return standing


def _repeated_answer(project: Project, user: Any, config: PairConfig, standing: PairJudgement) -> Answered:
    """A retry of ``standing``: nothing is recorded; the judge gets that answer and what is theirs to do now.

    The next item is the one the first request served them (their outstanding serve), or the one a request for
    their next item would give now, as ``serve_next_item`` does.
    """
    following, judge = _serve(project, user, config)
    progress = {"answered": judge.answered, "left": _items_left(project, user)}
    return Answered(standing, following, progress, recorded=False)


# --------------------------------------------------------------------------- undo and progress


def undo_last_judgement(project: Project, user: AbstractBaseUser) -> PairJudgement | None:
    """Turn the judge's last answer in the project back into an unanswered serve; None when there is none.

    The item is decided again without the answer; the serve the judge was shown
    next goes back to the queue, so their next item is the one undone. An answer
    on an item whose round is closed is final: undoing it would reopen an item
    the queue no longer serves, and the next request would drop the answer, so
    ``NothingToUndo`` is raised and nothing changes. The judgement returned carries the label taken back as
    ``taken_back_label`` (its ``label`` is blank now): the undo's answer names the answer it took back, which may
    have been given in another tab.
    """
    config = loaded_config(project)
    with transaction.atomic():
        judge = _lock_judge(project, user)
        last = (
            lock_rows(_with_counters(PairJudgement.objects), of=("self", "item"))
            .filter(judge=user, item__project=project, counted=True, answered_at__isnull=False)
            .order_by("-answered_at", "-id")
            .first()
        )
        if last is None:
            return None
        closed = PairRound.objects.filter(pk=last.item.round_id).exclude(status=PairRound.Status.OPEN).first()
        if closed is not None:
            raise NothingToUndo(
                f"your last answer ({last.label} on item {last.item_id}) cannot be taken back: round "
                f"{closed.number} is closed, so its answers are final"
            )
        if judge.held_id is not None and judge.held_id != last.pk:
            held = PairJudgement.objects.filter(pk=judge.held_id).first()
            if held is not None:
                _drop_serve(held)
        taken_back_label = last.label
        last.label = ""
        last.answered_at = None
        last.seconds = None
        last.served_at = locks.now()
        last.save(update_fields=["label", "answered_at", "seconds", "served_at"])
        item = recompute_item(last.item, config)
        item.save(update_fields=_RECOMPUTED_FIELDS)
        from annotate.services.pairs.flags import check_judge

        check_judge(project, user)  # the figures changed; below min_judgements this clears open flags
    undone = _with_texts(PairJudgement.objects, "item__").get(pk=last.pk)
    undone.taken_back_label = taken_back_label
    return undone


def _items_left(project: Project, user: Any) -> int:
    """Open items the judge may still answer: those the queue may serve them, and the one served and unanswered.

    The served one counts because it is on their screen, unanswered: the project page and the labeling page
    both show this figure as "items left for you", so they agree whether or not an item is open on screen.
    """
    params = _candidate_params(project, user)
    return int(_sql_rows(_ITEMS_LEFT_SQL, params + params)[0][0])


def judge_progress(project: Project, user: AbstractBaseUser) -> dict[str, int]:
    """The judge's counted answers in the project and the items left for them (``_items_left``): what the pairs
    project page, the labeling page and the API's progress show, one definition for all three."""
    answered = _judgements_of(project, user).filter(counted=True, answered_at__isnull=False).count()
    return {"answered": answered, "left": _items_left(project, user)}
