"""Batch duties: assigning, unassigning and reassigning annotators, and a batch's staffing."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Q

from annotate.models import Assignment, Batch, Membership, Project, Sample, SampleReview, SpanAnnotation
from annotate.services import progress
from annotate.services.members.common import MemberError, NeedsConfirmation, Role, Work, _describe
from annotate.services.rounds import RECONCILIATION_ROUND


def assignment_work(assignment: Assignment) -> Work:
    """The work an unassign or reassign would take out of the figures, by the pages' done rule.

    Only open assignments get here (a submitted one must be re-opened first), and in an open one
    the rule counts exactly the samples marked done: a re-opened imported round holds its spans
    and no done marks, which is what stays stored and is named in the confirmation.
    """
    spans = SpanAnnotation.objects.filter(
        sample__batch_id=assignment.batch_id, annotator_id=assignment.annotator_id, round=assignment.round
    ).count()
    reviews = SampleReview.objects.filter(
        sample__batch_id=assignment.batch_id, annotator_id=assignment.annotator_id, round=assignment.round
    ).aggregate(n=Count("id"), done=Count("id", filter=Q(done=True)))
    done = progress.done_count(
        Sample.objects.filter(batch_id=assignment.batch_id).count(),
        reviewed=reviews["n"], reviewed_done=reviews["done"],
        submitted=assignment.status == Assignment.Status.SUBMITTED,
    )
    return Work(spans=spans, done=done)


def _locked(assignment: Assignment) -> Assignment:
    """The assignment read again under a row lock, so its status is the one the change is checked against."""
    fresh = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("batch__project", "annotator")
        .filter(pk=assignment.pk)
        .first()
    )
    if fresh is None:
        raise MemberError("This assignment was removed meanwhile; nothing was changed")
    return fresh


def _check_can_leave(assignment: Assignment, confirm: bool, verb: str) -> Work:
    name = assignment.annotator.get_username()
    if assignment.status == Assignment.Status.SUBMITTED:
        raise MemberError(
            f"{name} submitted {_describe(assignment)}; re-open the round before you {verb} them"
        )
    if assignment.round < RECONCILIATION_ROUND and Assignment.objects.filter(
        batch_id=assignment.batch_id, annotator_id=assignment.annotator_id, round=RECONCILIATION_ROUND
    ).exists():
        raise MemberError(
            f"Round 2 of {assignment.batch.name} builds on {name}'s round-1 spans; "
            "unassign them from round 2 first"
        )
    work = assignment_work(assignment)
    if work and not confirm:
        raise NeedsConfirmation(
            f"{name} has {work} in {_describe(assignment)}. If you {verb} them, that work stays "
            f"stored (exports list it) but counts in no agreement, results or curation figure, and {name} "
            "can no longer open the batch. Confirm to go ahead."
        )
    return work


@transaction.atomic
def unassign_annotator(assignment: Assignment, *, confirm: bool = False) -> Work:
    """Take a batch's round away from an annotator; returns the work that was left out of the figures."""
    assignment = _locked(assignment)
    work = _check_can_leave(assignment, confirm, "unassign")
    assignment.delete()
    return work


def _annotator_member(project: Project, user_id: Any) -> AbstractBaseUser:
    membership = (
        Membership.objects.filter(project=project, user_id=user_id, role=Role.ANNOTATOR).select_related("user").first()
        if str(user_id).isdigit()
        else None
    )
    if membership is None:
        raise MemberError(f"Annotator: choose one of the annotators of {project.name}")
    return membership.user


@transaction.atomic
def assign_annotator(batch: Batch, user_id: Any, *, round: int = 1) -> Assignment:
    """Give one annotator a batch's round (the batch page's form; the project page assigns several at once)."""
    user = _annotator_member(batch.project, user_id)
    if Assignment.objects.filter(batch=batch, annotator=user, round=round).exists():
        raise MemberError(f"{user.get_username()} is already assigned to {batch.name} round {round}")
    return Assignment.objects.create(batch=batch, annotator=user, round=round)


@transaction.atomic
def reassign_annotator(assignment: Assignment, to_user_id: Any, *, confirm: bool = False) -> Assignment:
    """Move a batch's round from one annotator to another, who starts it afresh.

    The first annotator's work is not handed over (spans are a person's judgement): it stays
    stored under their name, out of the figures, as with unassigning.
    """
    assignment = _locked(assignment)
    batch = assignment.batch
    if assignment.round == RECONCILIATION_ROUND:
        raise MemberError(
            "Round 2 reconciles each annotator's own round-1 spans and cannot move to someone else; unassign "
            "instead"
        )
    to_user = _annotator_member(batch.project, to_user_id)
    if to_user.pk == assignment.annotator_id:
        raise MemberError(f"{to_user.get_username()} already holds this assignment")
    if Assignment.objects.filter(batch=batch, annotator=to_user, round=assignment.round).exists():
        raise MemberError(
            f"{to_user.get_username()} is already assigned to {_describe(assignment)}"
        )
    _check_can_leave(assignment, confirm, "reassign")
    assignment.delete()
    return Assignment.objects.create(batch=batch, annotator=to_user, round=assignment.round)


def batch_staffing(batch: Batch) -> dict[str, Any]:
    """The batch page: each round's assignments with their work, and who else could take one."""
    total = batch.samples.count()
    spans = {
        (row["annotator_id"], row["round"]): row["n"]
        for row in SpanAnnotation.objects.filter(sample__batch=batch)
        .values("annotator_id", "round").annotate(n=Count("id")).order_by()
    }
    reviewed = {
        (row["annotator_id"], row["round"]): (row["n"], row["done"])
        for row in SampleReview.objects.filter(sample__batch=batch)
        .values("annotator_id", "round").annotate(n=Count("id"), done=Count("id", filter=Q(done=True))).order_by()
    }
    annotators = [
        membership.user
        for membership in Membership.objects.filter(project=batch.project, role=Role.ANNOTATOR)
        .select_related("user").order_by("user__username")
    ]
    rounds: dict[int, list[dict[str, Any]]] = {}
    for assignment in batch.assignments.select_related("annotator").order_by("round", "annotator__username"):
        key = (assignment.annotator_id, assignment.round)
        n, marked = reviewed.get(key, (0, 0))
        # The done rule of every other page: imported work is submitted without reviews.
        done = progress.done_count(
            total, reviewed=n, reviewed_done=marked, submitted=assignment.status == Assignment.Status.SUBMITTED
        )
        rounds.setdefault(assignment.round, []).append(
            {"assignment": assignment, "work": Work(spans=spans.get(key, 0), done=done)}
        )
    taken = {(row["assignment"].annotator_id, number) for number, rows in rounds.items() for row in rows}
    return {
        "total": total,
        "rounds": [
            {
                "number": number,
                "rows": rows,
                "others": [user for user in annotators if (user.pk, number) not in taken],
                # A later round is open: this one is frozen for everyone and cannot be re-opened.
                "superseded_by": max(rounds) if number < max(rounds) else None,
            }
            for number, rows in sorted(rounds.items())
        ],
        "unassigned_round_one": [user for user in annotators if (user.pk, 1) not in taken],
        "annotator_count": len(annotators),
    }

