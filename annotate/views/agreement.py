"""The agreement page (sample-level alpha per scheme, per batch and pairwise; span agreement on request),
leaving an annotator out of one batch's agreement, and the disputes of one batch.

Admins and auditors only; the shared query reading and rendering are in annotate.views.figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotate import access, agreement
from annotate.models import Assignment, Batch, Membership, Project, Sample, SpanAnnotation
from annotate.services import agreement_admin, results_cache, stats
from annotate.services.results_cache import ServedFigures
from annotate.taxonomy import CATEGORY_NAMES
from annotate.views.figures import (
    DEFAULT_SCHEMES,
    SHOWN,
    BadQuery,
    _freshness,
    _nothing_newer,
    _render,
    _url,
    get_project_for_results,
    parse_choice,
    parse_id,
    parse_int,
    parse_round,
    parse_rounds,
    parse_schemes,
)

Role = Membership.Role

# Krippendorff (2004): alpha below .667 does not support even tentative conclusions.
LOW_ALPHA = 0.667
DISPUTES_SCHEME = "C|B|Q|U"  # the disputes page's scheme when its query names none
PAGE_BOOTSTRAP = 200  # resamples for the page's intervals; the agreement command's --bootstrap takes any
MAX_BOOTSTRAP = 2000
BATCHES_PER_PAGE = 100
# The agreement page marks an annotator of a batch with fewer spans than this, or with spans on fewer than this
# share of the batch's samples, while another annotator of the batch has more: a candidate to leave out.
FEW_SPANS = 3
FEW_SPAN_SHARE = 0.10


# --------------------------------------------------------------------------- agreement


@dataclass
class AgreementQuery:
    schemes: list[str]
    levels: list[str]
    aggregate: str
    rounds: list[int]
    bootstrap: int
    level_param: str = ""
    round_param: str = ""
    batch_page: int = 1

    @property
    def focus_scheme(self) -> str:
        return self.schemes[0]

    @property
    def focus_level(self) -> str:
        return self.levels[0]

    @property
    def pooled_bootstrap(self) -> int:
        return self.bootstrap if self.aggregate == "pooled" else 0

    def params(self, **override: Any) -> dict[str, Any]:
        values: dict[str, Any] = {
            "scheme": ", ".join(self.schemes),
            "level": self.level_param,
            "aggregate": self.aggregate,
            "round": self.round_param,
            "bootstrap": self.bootstrap if self.bootstrap != PAGE_BOOTSTRAP else "",
            "bpage": self.batch_page if self.batch_page > 1 else "",
        }
        return values | override


def read_agreement_query(query: QueryDict, known_rounds: list[int]) -> AgreementQuery:
    schemes = parse_schemes(query.getlist("scheme"))
    level_param = (query.get("level") or "").strip()
    levels = [parse_choice(level_param, "level", agreement.LEVELS, "nominal")] if level_param else list(agreement.LEVELS)
    aggregate = parse_choice(query.get("aggregate"), "aggregate", agreement.AGGREGATES, "pooled")
    rounds = parse_rounds(query.get("round"), known_rounds)
    bootstrap = parse_int(query.get("bootstrap"), "bootstrap", PAGE_BOOTSTRAP, 0, MAX_BOOTSTRAP)
    batch_page = parse_int(query.get("bpage"), "bpage", 1, 1)
    round_param = (query.get("round") or "").strip()
    return AgreementQuery(schemes, levels, aggregate, rounds, bootstrap, level_param, round_param, batch_page)


def _alpha_cell(report: dict[str, Any], **extra: Any) -> dict[str, Any]:
    alpha = report["alpha"]
    return {
        "alpha": alpha,
        "reason": report["reason"],
        "units": report["units"],
        "annotators": report["annotators"],
        "interval": report.get("interval"),
        "low": alpha is None or alpha < LOW_ALPHA,
        **extra,
    }


def serve_agreement(project: Project, query: AgreementQuery) -> ServedFigures:
    return results_cache.serve_figures(
        project, "agreement", schemes=query.schemes, levels=query.levels, aggregate=query.aggregate,
        rounds=query.rounds, bootstrap=query.pooled_bootstrap,
    )


def agreement_context(project: Project, figures: dict[str, Any], query: AgreementQuery, role: str) -> dict[str, Any]:
    """Rows of the main table, the per-batch table, the pairwise tables (figures: stats.agreement_figures)."""
    reports = {(report["scheme"], report["level"], report["round"]): report for report in figures["reports"]}
    table = [
        {
            "scheme": scheme,
            "cells": [
                _alpha_cell(reports[(scheme, level, round)], round=round, level=level)
                for round in query.rounds
                for level in query.levels
            ],
        }
        for scheme in query.schemes
    ]
    # The per-batch table is paged: a 100,000-sample project has 2,000 batches.
    names = list(
        dict.fromkeys(
            entry["batch"]
            for round in query.rounds
            for entry in reports[(query.focus_scheme, query.focus_level, round)]["per_batch"]
        )
    )
    pages = max(1, math.ceil(len(names) / BATCHES_PER_PAGE))
    number = min(query.batch_page, pages)
    shown = set(names[(number - 1) * BATCHES_PER_PAGE : number * BATCHES_PER_PAGE])
    batch_ids = dict(Batch.objects.filter(project=project, name__in=shown).values_list("name", "id"))
    people = _agreement_people(project, query.rounds, list(batch_ids.values()))
    batch_rows: dict[str, dict[str, Any]] = {}
    for round in query.rounds:
        for scheme in query.schemes:
            for entry in reports[(scheme, query.focus_level, round)]["per_batch"]:
                if entry["batch"] not in shown:
                    continue
                batch_id = batch_ids.get(entry["batch"])
                row = batch_rows.setdefault(
                    entry["batch"], {"batch": entry["batch"], "batch_id": batch_id, "rounds": {}}
                )
                slot = row["rounds"].setdefault(round, {"round": round, "cells": [], "people": []})
                slot["cells"].append(
                    _alpha_cell(
                        entry,
                        scheme=scheme,
                        disputes_url=_url("disputes", project.slug, batch=batch_id, round=round, scheme=scheme)
                        if batch_id
                        else None,
                    )
                )
                slot["people"] = people.get((batch_id, round), [])
    per_batch = [
        {**row, "rounds": [row["rounds"].get(round) for round in query.rounds]} for row in batch_rows.values()
    ]
    pairwise = [{"round": entry["round"], "pairs": entry["pairs"]} for entry in figures["pairwise"]]
    return {
        "table": table,
        "per_batch": per_batch,
        "batch_pages": {
            "number": number,
            "count": pages,
            "batches": len(names),
            "previous": _url("agreement", project.slug, **query.params(bpage=number - 1)) if number > 1 else None,
            "next": _url("agreement", project.slug, **query.params(bpage=number + 1)) if number < pages else None,
        },
        "pairwise": pairwise,
        "is_admin": role == Role.ADMIN,
        "spans_url": _url("agreement", project.slug, **query.params(section="spans")),
    }


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


def _agreement_people(
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


def serve_spans(project: Project, query: AgreementQuery) -> ServedFigures:
    return results_cache.serve_figures(
        project, "spans", scheme=query.focus_scheme, rounds=query.rounds,
        bootstrap=query.pooled_bootstrap if "nominal" in query.levels else 0,
    )


def span_context(figures: dict[str, Any], query: AgreementQuery) -> dict[str, Any]:
    """Token-level alpha beside the sample-level alpha, and pairwise span F1, per round (stats.span_figures)."""
    rounds = []
    for entry in figures["rounds"]:
        round, spans, sample_level = entry["round"], entry["spans"], entry["sample_alpha"]
        pairs = [
            {
                "annotators": pair["annotators"],
                "exact": pair["exact"]["overall"],
                "overlap": pair["overlap"]["overall"],
                "labels": [
                    {
                        "label": label,
                        "exact": pair["exact"]["per_label"].get(label),
                        "overlap": pair["overlap"]["per_label"].get(label),
                    }
                    for label in spans["labels"]
                ],
            }
            for pair in spans["pairs"]
        ]
        rounds.append(
            {
                "round": round,
                "labels": [{"code": label, "name": CATEGORY_NAMES.get(label, label)} for label in spans["labels"]],
                "sample_alpha": _alpha_cell(sample_level),
                "token_alpha": _alpha_cell(spans["token_alpha"]),
                "pairs": pairs,
            }
        )
    return {"span_rounds": rounds, "span_scheme": query.focus_scheme}


@require_GET
@login_required
def agreement_page(request: HttpRequest, slug: str) -> HttpResponse:
    project, role = get_project_for_results(request.user, slug)
    known = stats.project_rounds(project)
    context: dict[str, Any] = {
        "project": project,
        "role": role,
        "known_rounds": known,
        "levels": agreement.LEVELS,
        "aggregates": agreement.AGGREGATES,
        "default_schemes": DEFAULT_SCHEMES,
        "low_alpha": LOW_ALPHA,
        "few_spans": FEW_SPANS,
        "few_span_percent": round(100 * FEW_SPAN_SHARE),
        "form": {
            "scheme": ", ".join(request.GET.getlist("scheme")) or ", ".join(DEFAULT_SCHEMES),
            "level": request.GET.get("level", ""),
            "aggregate": request.GET.get("aggregate", "") or "pooled",
            "round": request.GET.get("round", ""),
            "bootstrap": request.GET.get("bootstrap", "") or PAGE_BOOTSTRAP,
        },
        # What a field shows when the URL leaves its parameter out, for history-forms.js after a Back.
        "defaults": {"scheme": ", ".join(DEFAULT_SCHEMES), "aggregate": "pooled", "bootstrap": PAGE_BOOTSTRAP},
    }
    try:
        query = read_agreement_query(request.GET, known)
    except BadQuery as error:
        return _render(request, "annotate/agreement.html", context | {"error": str(error)}, status=400)
    context |= {"query": query, "back": _url("agreement", project.slug, **query.params()).partition("?")[2]}
    section = request.GET.get("section", "")
    if section not in ("", "spans"):
        return _render(request, "annotate/agreement.html", context | {"error": f"section: unknown section {section!r}; "
                                                                      "use spans or leave it out"}, status=400)
    if not query.rounds:
        return _render(request, "annotate/agreement.html", context)
    if section == "spans":
        served = serve_spans(project, query)
        if _nothing_newer(request, served):
            return HttpResponse(status=204)
        poll = _url("agreement", project.slug, **query.params(section="spans", **{SHOWN: served.version}))
        context |= span_context(served.value, query) | {
            "show_spans": True, "span_freshness": _freshness(request, served, poll, "span-agreement"),
        }
        if request.htmx:
            return render(request, "annotate/agreement.html#spans", context)
    served = serve_agreement(project, query)
    if _nothing_newer(request, served):
        return HttpResponse(status=204)
    poll = _url("agreement", project.slug, **query.params(**{SHOWN: served.version}))
    context |= agreement_context(project, served.value, query, role) | {
        "freshness": _freshness(request, served, poll, "agreement-results"),
    }
    return _render(request, "annotate/agreement.html", context)


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


# --------------------------------------------------------------------------- disputes


@require_GET
@login_required
def disputes_page(request: HttpRequest, slug: str) -> HttpResponse:
    """Samples of one batch whose annotators' worst labels differ, each linked to its sample page."""
    project, role = get_project_for_results(request.user, slug)
    known = stats.project_rounds(project)
    context: dict[str, Any] = {"project": project, "role": role,
                               "defaults": {"round": known[0] if known else "", "scheme": DISPUTES_SCHEME}}
    try:
        round = parse_round(request.GET.get("round"), known, default=known[0] if known else None)
        if round is None:
            raise BadQuery("round", "the project has no round with assignments yet")
        scheme = parse_schemes(request.GET.getlist("scheme") or [DISPUTES_SCHEME])[0]
        raw_batch = (request.GET.get("batch") or "").strip()
        batch_id = parse_id(raw_batch, "batch") if raw_batch else None
    except BadQuery as error:
        return _render(request, "annotate/disputes.html", context | {"error": str(error)}, status=400)
    if batch_id is None:
        # An address without a batch (typed, or kept from an old link): the page offers the project's batches.
        batches = list(project.batches.order_by("position", "id"))
        return _render(request, "annotate/disputes.html",
                       context | {"choosing": True, "batches": batches, "round": round, "scheme": scheme})
    batch = get_object_or_404(Batch, pk=batch_id, project=project)
    found = stats.batch_disputes(project, batch, round, scheme)  # one batch's rows: quick, always fresh
    details = {
        row["id"]: row
        for row in Sample.objects.filter(pk__in=[entry["sample_id"] for entry in found["disputed"]]).values(
            "id", "position", "external_id", "generator", "summary"
        )
    }
    rows = [
        {
            "sample": details[entry["sample_id"]],
            "labels": [
                {"annotator": name, "code": code, "name": CATEGORY_NAMES[code]}
                for name, code in entry["labels"].items()
            ],
            "url": f"{reverse('sample', args=[project.slug, entry['sample_id']])}?round={round}",
        }
        for entry in found["disputed"]
        if entry["sample_id"] in details
    ]
    context |= {
        "batch": batch,
        "round": round,
        "scheme": found["scheme"],
        "disputes": found,
        "rows": rows,
        "agreement_url": _url("agreement", project.slug, scheme=found["scheme"], round=round),
    }
    return _render(request, "annotate/disputes.html", context)
