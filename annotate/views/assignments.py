"""A batch's annotators page (admins): assign, unassign and reassign annotators per round.

Answers with the page, or its ``staffing`` partial for htmx: 200 when done, 400 with the
error, 409 with a confirmation form when the change would take work out of the figures.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods, require_POST

from annotate import access
from annotate.models import Assignment, Batch
from annotate.services import members
from annotate.services.members import MemberError, NeedsConfirmation
from annotate.views.members import HtmxHttpRequest


def _batch_page(request: HtmxHttpRequest, batch: Batch, *, status: int = 200, **extra: Any) -> HttpResponse:
    context = {"project": batch.project, "batch": batch, "staffing": members.batch_staffing(batch), **extra}
    template = "annotate/batch_annotators.html#staffing" if request.htmx else "annotate/batch_annotators.html"
    return render(request, template, context, status=status)


@require_http_methods(["GET", "POST"])
@login_required
def batch_annotators(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """GET: the batch's assignments by round. POST: assign one more annotator to round 1."""
    batch = access.get_batch_for_admin(request.user, slug, pk)
    if request.method == "GET":
        return _batch_page(request, batch)
    try:
        assignment = members.assign_annotator(batch, request.POST.get("annotator", ""))
    except MemberError as error:
        return _batch_page(request, batch, error=str(error), status=400)
    return _batch_page(request, batch, notice=f"{assignment.annotator.username} is assigned to round 1.")


def _confirming(request: HtmxHttpRequest, assignment: Assignment, action: str, error: NeedsConfirmation) -> HttpResponse:
    confirm = {"action": action, "assignment": assignment, "message": str(error), "to": request.POST.get("to", "")}
    return _batch_page(request, assignment.batch, confirm=confirm, status=409)


@require_POST
@login_required
def unassign(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    assignment = access.get_assignment_for_admin(request.user, slug, pk)
    try:
        work = members.unassign_annotator(assignment, confirm=request.POST.get("confirm") == "yes")
    except NeedsConfirmation as error:
        return _confirming(request, assignment, "unassign", error)
    except MemberError as error:
        return _batch_page(request, assignment.batch, error=str(error), status=400)
    kept = f" Their {work} stay stored, out of the figures." if work else ""
    return _batch_page(
        request, assignment.batch,
        notice=f"{assignment.annotator.username} is no longer assigned to round {assignment.round}.{kept}",
    )


@require_POST
@login_required
def reassign(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    assignment = access.get_assignment_for_admin(request.user, slug, pk)
    try:
        new = members.reassign_annotator(
            assignment, request.POST.get("to", ""), confirm=request.POST.get("confirm") == "yes"
        )
    except NeedsConfirmation as error:
        return _confirming(request, assignment, "reassign", error)
    except MemberError as error:
        return _batch_page(request, assignment.batch, error=str(error), status=400)
    return _batch_page(
        request, assignment.batch,
        notice=f"Round {new.round} moved from {assignment.annotator.username} to {new.annotator.username}.",
    )
