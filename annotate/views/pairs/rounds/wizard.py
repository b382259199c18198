"""The round wizard: preview the funnel, then start the job that draws the round; and the span vectors the
detector needs first (their section polls while a vector job runs)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect, trigger_client_event

from annotate.models import Job, PairItem, PairOriginal, Project
from annotate.services.pairs import rounds, vectors
from annotate.views.pairs.rounds.form import RoundForm, read_round_form, wizard_fields
from annotate.views.pairs.rounds.page import pairs_project
from annotate.views.pairs.rounds.words import (
    funnel_rows,
    ratio_context,
    selection_balance_words,
    selection_in_words,
)

# Sent with the span-vector section's answer once no vector job runs: the wizard's form previews again.
VECTORS_FINISHED_EVENT = "span-vectors-finished"


def _empty_project(project: Project, plan: Any) -> dict[str, int] | None:
    """When a refused plan comes from a project without any item yet: how many imported texts wait to be perturbed
    (the wizard then links to the import and the perturbation, not to rounds)."""
    if plan is None or plan.refusal is None or PairItem.objects.filter(project=project).exists():
        return None
    return {"originals": PairOriginal.objects.filter(project=project).count()}


@require_http_methods(["GET", "POST"])
@login_required
def round_new(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the wizard with a preview of the funnel (the preview alone for htmx). POST: start the round's job.

    The round is drawn by a background job (it trains the detector, and first computes the span vectors still
    missing); a refusal the preview can already see (too few labelled items, an empty pool) is shown at once
    and starts nothing. So is one of a second admin's: another round job is queued or running, or the round
    the form showed (its hidden ``number``) was created meanwhile; the fields stay as typed.
    """
    project, _ = pairs_project(request, slug, admin=True)
    number = rounds.next_round_number(project)
    if request.method == "GET" and request.htmx and request.htmx.target == "span-vectors":
        return _span_vectors_section(request, project, number)
    data = request.POST if request.method == "POST" else request.GET
    form = read_round_form(data, fresh_seed=request.method == "GET" and not data, random_draw=number == 1)
    stale = _stale_vectors(project, number)
    plan = None
    refusal: str | None = None
    if not form.errors:
        # On a POST with vectors missing the preview cannot train: the job computes them first, then draws or refuses.
        if not (request.method == "POST" and stale):
            # Moving a threshold only filters again: the detector and the pool's P(H) are kept between previews.
            plan = rounds.preview_round(project, **form.parameters, reuse_scores=True)
            refusal = plan.refusal
        if request.method == "POST" and refusal is None:
            started = _start(request, project, _submitted_number(request.POST, number), form, showing=number)
            if isinstance(started, HttpResponse):
                return started
            refusal = started
    context = {
        "project": project,
        "form": form,
        "number": number,
        "plan": plan,
        "refusal": refusal,
        **_vector_context(project, stale),
        "round_one": number == 1,
        "fields": wizard_fields(form, round_one=number == 1),
        # An htmx preview also replaces each field's message beside it (out of band): the form is not swapped.
        "oob_errors": bool(request.htmx),
        "empty_project": _empty_project(project, plan),
        "unfinished": rounds.unfinished_open_round(project),
        **_busy_context(project),
        "ratio": ratio_context(plan.ratio_dict() if plan and plan.number > 1 else None),
        "ratio_source": plan.ratio_source if plan else None,
        "selection_balance": selection_balance_words(plan.selection_balance if plan else None),
        "funnel": funnel_rows(plan.funnel if plan else None),
        "preview_items": [
            {"item": item, "why": selection_in_words(selection)} for item, selection in _preview_items(plan)
        ],
    }
    status = 400 if (form.errors or refusal) and request.method == "POST" and not request.htmx else 200
    template = "annotate/pairs/round_new.html#preview" if request.htmx else "annotate/pairs/round_new.html"
    return render(request, template, context, status=status)


def _busy_context(project: Project) -> dict[str, Any]:
    """The round job that keeps the wizard from starting one (if any), how long it has waited, and its cancel."""
    busy_job = rounds.active_round_job(project)
    return {"busy_job": busy_job, "busy": rounds.round_job_busy(project),
            "busy_wait": rounds.round_job_wait(busy_job) if busy_job else None}


def _submitted_number(data: QueryDict, current: int) -> int:
    """The round the submitted wizard showed (its hidden field); the next round now when the form had none."""
    raw = data.get("number", "").strip()
    return int(raw) if raw.isascii() and raw.isdigit() and int(raw) >= 1 else current


def _start(request: HttpRequest, project: Project, number: int, form: RoundForm, *, showing: int
           ) -> HttpResponse | str:
    """Start the job for round ``number`` and go to its page; the refusal (another round job runs, or round
    ``number`` exists now) when it may not start, for the wizard to show with the fields as they were typed.
    ``showing`` is the round the wizard shown again plans: a stale refusal points the admin to it."""
    try:
        job = rounds.start_round_job(project, request.user, number=number, **form.parameters)
    except rounds.RoundRefused as refusal:
        # A round drawn meanwhile: the wizard shown again plans round `showing` now, and says so in its own words.
        return rounds.stale_wizard_refusal(project, number, showing) or str(refusal)
    return _to_round_job(request, project, job)  # a job the broker refused shows why on its page (failed)


def _stale_vectors(project: Project, number: int) -> int:
    """Items without a span vector from the project's encoder; round 1 needs none (it draws at random)."""
    return vectors.stale_items(project, vectors.encoder_name(project)).count() if number > 1 else 0


def _vector_context(project: Project, stale: int) -> dict[str, Any]:
    """The latest span-vector job; once no item lacks its vector, only if it has ended: a job still queued (no
    worker yet) would show a progress of 0 of N that is not the items' state (as on the project page)."""
    jobs = [job for job in Job.objects.filter(project=project, kind=Job.Kind.PAIR_VECTORS)[:1]
            if stale or not job.is_active]
    return {"stale_vectors": stale, "vector_jobs": jobs, "vectors_running": any(job.is_active for job in jobs)}


def _span_vectors_section(request: HttpRequest, project: Project, number: int) -> HttpResponse:
    """The span-vector section alone, which polls itself while a vector job runs.

    Its answer once no job runs carries VECTORS_FINISHED_EVENT: the wizard's form previews again with the
    values it holds, so the stale count, the funnel's pool and the refusal follow the finished job without a
    reload (and without a fresh seed).
    """
    context = {"project": project, "round_one": number == 1,
               **_vector_context(project, _stale_vectors(project, number))}
    response = render(request, "annotate/pairs/round_new.html#vectors", context)
    if not context["vectors_running"]:
        trigger_client_event(response, VECTORS_FINISHED_EVENT)
    return response


def _to_round_job(request: HttpRequest, project: Project, job: Job) -> HttpResponse:
    url = reverse("pairs-round-job", args=[project.slug, job.pk])
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)


@require_POST
@login_required
def vectors_start(request: HttpRequest, slug: str) -> HttpResponse:
    """Compute the span vectors the detector needs (a background job); the wizard shows its progress."""
    project, _ = pairs_project(request, slug, admin=True)
    job = vectors.start_vector_job(project, request.user)
    if job.status == Job.Status.FAILED:  # the broker refused its task: the job says why
        messages.error(request, f"Span vectors not started: {job.error}")
    else:
        messages.success(request, f"Computing the span vectors of {job.total} items; the preview works once they "
                                  "exist.")
    url = reverse("pairs-round-new", args=[project.slug])
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)


def _preview_items(plan: Any, limit: int = 20) -> list[tuple[PairItem, dict[str, Any]]]:
    """The first items the preview would draw, looked up for display."""
    if plan is None or not plan.selected:
        return []
    chosen = plan.selected[:limit]
    items = PairItem.objects.only("external_id", "original_words", "perturbed_words").in_bulk(
        [item_id for item_id, _ in chosen]
    )
    return [(items[item_id], selection) for item_id, selection in chosen if item_id in items]
