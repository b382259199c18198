"""Frozen rounds: submitted work stays as submitted, unless an admin re-opens it with a reason.

An annotator's round of a batch is frozen once they submit it (every sample done),
and round 1 is frozen for everyone once round 2 of the batch opens: from then on
the others' round-1 work has been shown, and agreement and gold labels are built
from it. An admin may re-open one annotator's round; the re-opening is logged and
ends when the annotator submits the round again (``submit_round_again``). Marking
the last sample done does not end it: in a re-opened round every sample is usually
done already, so ``D`` would freeze the round again after the first fix.

Whether a round is frozen is decided under the annotator's assignment row locks (``lock_rounds``), never from
what a request read at its start: a span saved in one tab while ``D`` on the last sample submits the round in
another is either stored before the submission or refused, never stored after it.

Lock order. Every transaction that changes an annotator's work, or the rounds it belongs to, takes its row locks in
this order, so no two of them wait on each other in a circle (a deadlock):

1. the batch row (``rounds.open_reconciliation_round``);
2. assignment rows, in one statement: one annotator's rows on one batch in round order (span writes, done marks,
   visit times: ``lock_rounds``), one batch's round-1 rows in id order (opening round 2), one annotator's open rows
   in batch order (``members.remove_member``, ``members.change_role``), or one row (re-opening, submitting again,
   unassigning, reassigning); ``FOR UPDATE OF`` the assignment rows, never the batch or user rows they join;
3. the project row, shared (``FOR KEY SHARE``, in the same statement as 2: a span write that carries labels checks
   them against the label set as it is now, ``lock_rounds_and_label_set``); ``labelsets.save_label_set`` takes it
   ``FOR UPDATE`` and no assignment lock;
4. the span or review rows being written.

SQLite has no row locks and needs none: its write transactions begin IMMEDIATE, one at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import Exists, Max, OuterRef, Q
from django.utils import timezone

from annotate.access import AssignmentStates
from annotate.models import Assignment, Batch, GoldLabel, Project, RoundReopening, Sample, SampleReview, SpanAnnotation


class RoundFrozen(Exception):
    """A write to a frozen round; the message says why and what to do.

    ``later_round``: the open round the change belongs in instead (round 2 once it opened over round 1), so an
    API answer can name the value to send; None when the round is frozen because it was submitted.
    """

    def __init__(self, message: str, *, later_round: int | None = None) -> None:
        super().__init__(message)
        self.later_round = later_round


class ReopenError(ValueError):
    """A re-opening was refused; nothing changed. ``field``: the input at fault (``reason``), None when the round's
    state refuses it (so the API tells bad input, 400, from a refusal, 409)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class SubmitError(ValueError):
    """Submitting a round again was refused; nothing changed. ``not_done``: the samples (ids) still to mark done."""

    def __init__(self, message: str, *, not_done: list[int] | None = None) -> None:
        super().__init__(message)
        self.not_done = not_done or []


class NotAssigned(ValueError):
    """The annotator holds no such round of the batch."""


def frozen_reason(states: AssignmentStates, round: int, batch_name: str | Callable[[], str]) -> str | None:
    """Why this annotator's round of the batch is read-only, or None while they may still change it.

    ``batch_name`` may be a callable, so the hot write path loads the batch only to explain a refusal.
    """
    if not states.frozen(round):
        return None  # open, re-opened, or not assigned (the caller's assignment check says so)
    submitted_at = states.rounds[round][2]
    later_open = any(later > round for later in states.rounds)
    if callable(batch_name):
        batch_name = batch_name()
    if later_open:
        return (f"Round {round + 1} of {batch_name} is open, so round {round} is frozen for everyone and cannot be "
                f"re-opened (round {round + 1} began from copies of its spans); make changes in round {round + 1}.")
    when = f" on {timezone.localtime(submitted_at):%Y-%m-%d %H:%M}" if submitted_at else ""
    return (f"You submitted round {round} of {batch_name}{when}, so it is frozen; "
            "ask an admin to re-open it if it must change.")


def lock_rounds(sample: Sample, annotator: AbstractBaseUser) -> AssignmentStates:
    """The annotator's rounds of the sample's batch as they are now, their rows locked until the transaction ends.

    Call it inside the write's transaction, before anything is checked or written, and pass the states to the checks
    (``check_writable(..., states=)``) instead of the ones the request looked up at its start. One statement locks
    and reads the rows: PostgreSQL gives a statement that waited for a row the row as committed by the change it
    waited for (a submission, a re-opening; one deleted meanwhile, by an unassignment, is left out). A round it
    cannot see, inserted while it waited, can only be round 2 opened over this round 1, and round 2 opens only over
    round-1 rows already submitted (``rounds.reconciliation_state``), which this statement does see: frozen either way.
    """
    return _lock_rounds(sample, annotator, label_set=False)[0]


def lock_rounds_and_label_set(sample: Sample, annotator: AbstractBaseUser) -> tuple[AssignmentStates, Any]:
    """``lock_rounds`` for a write that carries labels: also the project's label set as it is now (None when the
    annotator holds no round of the batch), its row held shared (FOR KEY SHARE) until the transaction ends.

    A label-set save (``labelsets.save_label_set``, FOR UPDATE) waits for the span writes in flight before it counts
    the labels in use, and a span write waits for a save in flight, then reads the saved label set. Span writes do
    not wait for each other, nor for changes to the project that leave its key alone (settings, accepting agreed
    samples: FOR NO KEY UPDATE).
    """
    return _lock_rounds(sample, annotator, label_set=True)


_STATE_COLUMNS = ("round", "status", "reopened", "submitted_at")


def _lock_rounds(sample: Sample, annotator: AbstractBaseUser, *, label_set: bool) -> tuple[AssignmentStates, Any]:
    if label_set and connection.vendor == "postgresql":
        # Both locks and the label set in one statement: the ORM has no FOR KEY SHARE.
        assignments, batches, projects = (model._meta.db_table for model in (Assignment, Batch, Project))
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {', '.join(f'a.{column}' for column in _STATE_COLUMNS)}, p.taxonomy FROM {assignments} a "  # noqa: S608
                f"JOIN {batches} b ON b.id = a.batch_id JOIN {projects} p ON p.id = b.project_id "
                "WHERE a.batch_id = %s AND a.annotator_id = %s ORDER BY a.round FOR UPDATE OF a FOR KEY SHARE OF p",
                [sample.batch_id, annotator.pk],
            )
            rows = cursor.fetchall()
        taxonomy = Project._meta.get_field("taxonomy")
        rows = [(*row[:4], taxonomy.from_db_value(row[4], None, connection)) for row in rows]
    else:
        # SQLite has no row locks (select_for_update does nothing there) and needs none: its write transaction
        # (IMMEDIATE) holds the whole database.
        columns = [*_STATE_COLUMNS, *(["batch__project__taxonomy"] if label_set else [])]
        mine = Assignment.objects.filter(batch_id=sample.batch_id, annotator=annotator).order_by("round")
        rows = list(mine.select_for_update(of=("self",)).values_list(*columns))
    states = AssignmentStates(annotator.pk, {row[0]: (row[1], row[2], row[3]) for row in rows})
    return states, (rows[0][4] if label_set and rows else None)


def check_writable(
    sample: Sample, annotator: AbstractBaseUser, round: int, *, states: AssignmentStates | None = None
) -> None:
    """Raise RoundFrozen when the annotator's round of this sample's batch is frozen; ``states``: the ones
    ``lock_rounds`` read (by default those the request looked up, or read afresh)."""
    states = AssignmentStates.of(sample, annotator) if states is None else states
    reason = frozen_reason(states, round, lambda: sample.batch.name)
    if reason:
        later_open = any(later > round for later in states.rounds)
        raise RoundFrozen(reason, later_round=round + 1 if later_open else None)  # the round frozen_reason names


@transaction.atomic
def reopen_round(assignment: Assignment, admin: AbstractBaseUser, reason: str) -> RoundReopening:
    """Let one annotator change a frozen round again; logged with who, when and why."""
    reason = (reason or "").strip()
    if not reason:
        raise ReopenError("Reason: say why this round is re-opened (it is kept in the log).", field="reason")
    if len(reason) > 2000:
        raise ReopenError(f"Reason: at most 2000 characters, got {len(reason)}.", field="reason")
    # The assignment row alone (OF self): locking its batch row too would take the locks in the opposite order to
    # rounds.open_reconciliation_round (batch, then round-1 assignments), which waits for this re-opening.
    assignment = (
        Assignment.objects.select_for_update(of=("self",)).select_related("batch", "annotator").get(pk=assignment.pk)
    )
    later = later_round_open(assignment.batch_id, assignment.round)
    if later is not None:
        # The later round was seeded with copies of this round's spans and shows them to the others:
        # changing them now would let the two drift apart.
        raise ReopenError(
            f"Round {later} of {assignment.batch.name} is open, so round {assignment.round} is frozen for "
            f"everyone and cannot be re-opened (round {later} began from copies of its spans). Nothing was "
            f"changed: {assignment.annotator.username}'s changes belong in round {later}."
        )
    if not AssignmentStates.load(assignment.batch_id, assignment.annotator).frozen(assignment.round):
        raise ReopenError(
            f"Round {assignment.round} of {assignment.batch.name} is not frozen for {assignment.annotator.username}."
        )
    assignment.reopened = True
    assignment.status, assignment.submitted_at = Assignment.Status.ASSIGNED, None
    assignment.save(update_fields=["reopened", "status", "submitted_at"])
    return RoundReopening.objects.create(assignment=assignment, reopened_by=admin, reason=reason)


def later_round_open(batch_id: int, round: int) -> int | None:
    """The latest round of the batch after ``round`` that is open (anyone assigned to it), or None."""
    return Assignment.objects.filter(batch_id=batch_id, round__gt=round).aggregate(latest=Max("round"))["latest"]


@transaction.atomic
def submit_round_again(batch: Batch, annotator: AbstractBaseUser, *, round: int) -> Assignment:
    """Freeze a re-opened round again, on the annotator's request (the page's Submit again, or the API).

    Only here does a re-opened round end: marking samples done never submits it. As at the first
    submission, every sample of the batch must be marked done; a sample un-marked during the
    re-opening is named in the refusal. Raises NotAssigned, RoundFrozen (already frozen, with the
    reason) or SubmitError, and changes nothing then.
    """
    assignment = (
        Assignment.objects.select_for_update().filter(batch=batch, annotator=annotator, round=round).first()
    )
    if assignment is None:
        raise NotAssigned(f"you have no round {round} of {batch.name}")
    if not assignment.reopened:
        reason = frozen_reason(AssignmentStates.load(batch.pk, annotator), round, batch.name)
        if reason:
            raise RoundFrozen(reason)
        raise SubmitError(
            f"round {round} of {batch.name} is not re-opened, so there is nothing to submit again: a round is "
            "submitted when you mark its last sample done"
        )
    missing = samples_not_done(batch, annotator, round)
    if missing:
        raise SubmitError(_not_done_message(batch, round, missing), not_done=[pk for pk, _ in missing])
    assignment.status, assignment.submitted_at = Assignment.Status.SUBMITTED, timezone.now()
    assignment.reopened = False
    assignment.save(update_fields=["status", "submitted_at", "reopened"])
    RoundReopening.objects.filter(assignment=assignment, closed_at__isnull=True).update(
        closed_at=assignment.submitted_at
    )
    return assignment


def samples_not_done(batch: Batch, annotator: AbstractBaseUser, round: int) -> list[tuple[int, int]]:
    """(sample id, place in the batch from 1, as the page numbers it) of each sample not marked done.

    In an open round only a done mark counts (annotate.services.progress): a re-opened imported
    round, submitted without marks, needs each sample marked done, as a native one did.
    """
    done = set(
        SampleReview.objects.filter(sample__batch=batch, annotator=annotator, round=round, done=True)
        .values_list("sample_id", flat=True)
    )
    order = Sample.objects.filter(batch=batch).order_by("position", "id").values_list("id", flat=True)
    return [(pk, place) for place, pk in enumerate(order, start=1) if pk not in done]


NAMED_AT_MOST = 10


def _not_done_message(batch: Batch, round: int, missing: list[tuple[int, int]]) -> str:
    places = [str(place) for _, place in missing[:NAMED_AT_MOST]]
    more = len(missing) - len(places)
    listed = ", ".join(places) + (f" and {more} more" if more else "")
    which = "sample" if len(missing) == 1 else "samples"
    return (
        f"{which} {listed} of {batch.name} (round {round}) {'is' if len(missing) == 1 else 'are'} not marked "
        f"done: mark {'it' if len(missing) == 1 else 'them'} done (D), then submit again; the round is still open"
    )


def open_reopening(assignment_id: int) -> RoundReopening | None:
    """The re-opening in force on this assignment (who re-opened it and why), or None."""
    return (
        RoundReopening.objects.filter(assignment_id=assignment_id, closed_at__isnull=True)
        .select_related("reopened_by")
        .first()
    )


def reopenings(project: Project) -> list[RoundReopening]:
    return list(
        RoundReopening.objects.filter(assignment__batch__project=project)
        .select_related("assignment__batch", "assignment__annotator", "reopened_by")
    )


def stale_gold_samples(project: Project, *, sample_id: int | None = None) -> dict[int, str]:
    """Gold labels built from spans that changed afterwards: sample id -> what changed.

    A gold label is stale when a span that counts (curation's roster, ``rounds.submitted_spans``: the
    batch's submitters in the round, and anyone whose submitted round an admin re-opened) of its
    sample and round was written after the label was decided, or when a span it was built from no
    longer exists. A newly assigned annotator still at work writes spans no curation uses, so they
    leave the gold label current. ``sample_id`` asks about one sample only (the adjudication page).
    The spans are selected by a join on the gold labels, never by lists of ids, which grow with the
    project.
    """
    golds = GoldLabel.objects.filter(sample__project=project)
    spans = SpanAnnotation.objects.filter(sample__project=project, sample__gold__isnull=False)
    if sample_id is not None:
        golds, spans = golds.filter(sample_id=sample_id), spans.filter(sample_id=sample_id)
    rows = list(golds.values_list("sample_id", "round", "decided_at", "spans"))
    if not rows:
        return {}
    counting = Assignment.objects.filter(
        batch_id=OuterRef("sample__batch_id"), annotator_id=OuterRef("annotator_id"), round=OuterRef("round")
    ).filter(Q(status=Assignment.Status.SUBMITTED) | Q(reopened=True))
    latest = {
        (row["sample_id"], row["round"]): row["last"]
        for row in spans.filter(Exists(counting)).values("sample_id", "round").annotate(last=Max("updated_at"))
        .order_by()
    }
    # A gold span comes from a span of the same sample, so the spans of samples with a gold label are enough.
    existing = set(spans.values_list("pk", flat=True))
    stale: dict[int, str] = {}
    for gold_sample_id, round, decided_at, gold_spans in rows:
        gone = [span["from_span"] for span in gold_spans
                if span.get("from_span") and span["from_span"] not in existing]
        last = latest.get((gold_sample_id, round))
        if gone:
            stale[gold_sample_id] = f"{len(gone)} span(s) it was built from were deleted"
        elif last is not None and last > decided_at:
            stale[gold_sample_id] = (
                f"spans changed on {timezone.localtime(last):%Y-%m-%d %H:%M}, after the gold label"
            )
    return stale
