"""Frozen rounds: submitted work stays as submitted, unless an admin re-opens it with a reason.

An annotator's round of a batch is frozen once they submit it (every sample done),
and round 1 is frozen for everyone once round 2 of the batch opens: from then on
the others' round-1 work has been shown, and agreement and gold labels are built
from it. An admin may re-open one annotator's round; the re-opening is logged and
ends when the annotator submits again.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotate.access import AssignmentStates
from annotate.models import Assignment, GoldLabel, Project, RoundReopening, Sample, SpanAnnotation


class RoundFrozen(Exception):
    """A write to a frozen round; the message says why and what to do."""


class ReopenError(ValueError):
    pass


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
        return (f"Round {round + 1} of {batch_name} is open, so round {round} is frozen for everyone; "
                "ask an admin to re-open it if it must change.")
    when = f" on {timezone.localtime(submitted_at):%Y-%m-%d %H:%M}" if submitted_at else ""
    return (f"You submitted round {round} of {batch_name}{when}, so it is frozen; "
            "ask an admin to re-open it if it must change.")


def check_writable(sample: Sample, annotator: AbstractBaseUser, round: int) -> None:
    """Raise RoundFrozen when the annotator's round of this sample's batch is frozen."""
    reason = frozen_reason(AssignmentStates.of(sample, annotator), round, lambda: sample.batch.name)
    if reason:
        raise RoundFrozen(reason)


@transaction.atomic
def reopen_round(assignment: Assignment, admin: AbstractBaseUser, reason: str) -> RoundReopening:
    """Let one annotator change a frozen round again; logged with who, when and why."""
    reason = (reason or "").strip()
    if not reason:
        raise ReopenError("reason: say why this round is re-opened (it is kept in the log)")
    if len(reason) > 2000:
        raise ReopenError(f"reason: at most 2000 characters, got {len(reason)}")
    assignment = Assignment.objects.select_for_update().select_related("batch", "annotator").get(pk=assignment.pk)
    later = later_round_open(assignment.batch_id, assignment.round)
    if later is not None:
        # The later round was seeded with copies of this round's spans and shows them to the others:
        # changing them now would let the two drift apart.
        raise ReopenError(
            f"round {later} of {assignment.batch.name} is open, so round {assignment.round} is frozen for "
            f"everyone and cannot be re-opened (round {later} began from copies of its spans); nothing was "
            f"changed: {assignment.annotator.username}'s changes belong in round {later}"
        )
    if not AssignmentStates.load(assignment.batch_id, assignment.annotator).frozen(assignment.round):
        raise ReopenError(
            f"{assignment.annotator.username}'s round {assignment.round} of {assignment.batch.name} is not frozen"
        )
    assignment.reopened = True
    assignment.status, assignment.submitted_at = Assignment.Status.ASSIGNED, None
    assignment.save(update_fields=["reopened", "status", "submitted_at"])
    return RoundReopening.objects.create(assignment=assignment, reopened_by=admin, reason=reason)


def later_round_open(batch_id: int, round: int) -> int | None:
    """The latest round of the batch after ``round`` that is open (anyone assigned to it), or None."""
    return Assignment.objects.filter(batch_id=batch_id, round__gt=round).aggregate(latest=Max("round"))["latest"]


def close_reopening(assignment: Assignment) -> None:
    """The annotator submitted a re-opened round again: it is frozen once more."""
    if assignment.reopened:
        assignment.reopened = False
        assignment.save(update_fields=["reopened"])
        RoundReopening.objects.filter(assignment=assignment, closed_at__isnull=True).update(closed_at=timezone.now())


def reopenings(project: Project) -> list[RoundReopening]:
    return list(
        RoundReopening.objects.filter(assignment__batch__project=project)
        .select_related("assignment__batch", "assignment__annotator", "reopened_by")
    )


def stale_gold_samples(project: Project, *, sample_id: int | None = None) -> dict[int, str]:
    """Gold labels built from spans that changed afterwards: sample id -> what changed.

    A gold label is stale when a span of its sample and round was written after the
    label was decided, or when a span it was built from no longer exists. ``sample_id``
    asks about one sample only (the adjudication page). The spans are selected by a join
    on the gold labels, never by lists of ids, which grow with the project.
    """
    golds = GoldLabel.objects.filter(sample__project=project)
    spans = SpanAnnotation.objects.filter(sample__project=project, sample__gold__isnull=False)
    if sample_id is not None:
        golds, spans = golds.filter(sample_id=sample_id), spans.filter(sample_id=sample_id)
    rows = list(golds.values_list("sample_id", "round", "decided_at", "spans"))
    if not rows:
        return {}
    latest = {
        (row["sample_id"], row["round"]): row["last"]
        for row in spans.values("sample_id", "round").annotate(last=Max("updated_at")).order_by()
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
