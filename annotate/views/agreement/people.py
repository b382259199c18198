"""The annotators of a batch on the agreement page: their span counts, the mark on those with few spans (a
candidate to leave out), and leaving one out of the batch's agreement or bringing them back (admins)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotate import access
from annotate.models import Assignment, Project, Sample, SpanAnnotation
from annotate.services import agreement_admin
from annotate.views.figures import BadQuery, parse_id

# The agreement page marks an annotator of a batch with fewer spans than this, or with spans on fewer than this
# share of the batch's samples, while another annotator of the batch has more: a candidate to leave out.
FEW_SPANS = 3
FEW_SPAN_SHARE = 0.10


def few_spans(spans: int, samples_with_spans: int, samples: int) -> bool:
    """Fewer than FEW_SPANS spans, or spans on fewer than FEW_SPAN_SHARE of the batch's samples."""
    return spans < FEW_SPANS or (samples > 0 and samples_with_spans / samples < FEW_SPAN_SHARE)


def mark_few_spans(people: list[dict[str, Any]], samples: int) -> None:
    """Mark ``few`` on the annotators of one batch and round whose spans are few while someone else's are not.

    When everyone has few spans (a batch of clean summaries), nobody is marked.
    """
    lacking = [few_spans(p["spans"], p["samples_with_spans"], samples) for p in people]
    for person, short in zip(people, lacking, strict=True):
        person["few"] = short and not all(lacking)


def agreement_people(
    project: Project, rounds: list[int], batch_ids: list[int]
) -> dict[tuple[int, int], list[dict[str, Any]]]:
    """(batch id, round) -> the batch's submitters in that round, with their exclusion flag and span counts."""
    rows = (
        Assignment.objects.filter(
            batch__project=project, batch_id__in=batch_ids, round__in=rounds, status=Assignment.Status.SUBMITTED
        )
        .order_by("batch_id", "round", "annotator__username")
        .values_list("pk", "batch_id", "round", "annotator_id", "annotator__username", "excluded_from_agreement")
    )
    counts = {
        (row["sample__batch_id"], row["round"], row["annotator_id"]): (row["spans"], row["samples"])
        for row in SpanAnnotation.objects.filter(sample__batch_id__in=batch_ids, round__in=rounds)
        .values("sample__batch_id", "round", "annotator_id")
        .annotate(spans=Count("id"), samples=Count("sample_id", distinct=True))
    }
    sizes = dict(
        Sample.objects.filter(batch_id__in=batch_ids).values("batch_id").annotate(n=Count("id")).values_list("batch_id", "n")
    )
    people: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for pk, batch_id, round, user_id, username, excluded in rows:
        spans, with_spans = counts.get((batch_id, round, user_id), (0, 0))
        people.setdefault((batch_id, round), []).append(
            {"assignment": pk, "name": username, "excluded": excluded, "spans": spans,
             "samples_with_spans": with_spans, "samples": sizes.get(batch_id, 0)}
        )
    for (batch_id, _), group in people.items():
        mark_few_spans(group, sizes.get(batch_id, 0))
    return people


def _parse_flag(raw: str | None) -> bool:
    value = (raw or "").strip().lower()
    if value in ("1", "true", "on", "yes"):
        return True
    if value in ("0", "false", "off", "no"):
        return False
    raise BadQuery("excluded", f"must be true or false, not {raw!r}")


@require_POST
@login_required
def agreement_exclusion(request: HttpRequest, slug: str) -> HttpResponse:
    """Admins: leave an annotator out of one batch's agreement, or bring them back."""
    project, _ = access.get_project_for_user(request.user, slug, admin=True)
    try:
        pk = parse_id(request.POST.get("assignment"), "assignment")
        excluded = _parse_flag(request.POST.get("excluded"))
    except BadQuery as error:
        return HttpResponse(str(error), status=400, content_type="text/plain; charset=utf-8")
    assignment = get_object_or_404(
        Assignment.objects.select_related("batch", "annotator"), pk=pk, batch__project=project
    )
    agreement_admin.set_agreement_exclusion(assignment, excluded)
    verb = "left out of" if excluded else "counted again in"
    messages.success(
        request,
        f"{assignment.annotator.username} is {verb} the agreement of {assignment.batch.name} (round {assignment.round}).",
    )
    back = QueryDict(request.POST.get("back", "")).urlencode()  # re-encoded: only ever a query string
    url = reverse("agreement", args=[project.slug]) + (f"?{back}" if back else "")
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)
