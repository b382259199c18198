"""Agreement, disputes and results pages (htmx). Admins and auditors only.

Annotators get 403 on all of them: the figures pool everyone's work, and an
annotator must not see another annotator's round-1 labels. Every number comes
from annotate.services.stats: the agreement and results figures through the
figure store in annotate.services.results_cache (stale figures are shown with
their age while a task refreshes them, and the page polls once for the new
ones), the disputes of one batch directly. This module only reads the query,
shapes the figures into rows and renders. A form change re-renders only the
``results`` partial when the request comes from htmx.
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
from django.utils.timesince import timesince
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotate import access, agreement
from annotate.models import Assignment, Batch, Membership, Project, Sample, SpanAnnotation
from annotate.results import RATE_COLUMNS, rank_generators
from annotate.services import agreement_admin, results_cache, stats
from annotate.services.results_cache import ServedFigures
from annotate.taxonomy import CATEGORY_NAMES

Role = Membership.Role

# FaithBench's three views of the labels, from coarse to fine (DESIGN.md lists all five).
DEFAULT_SCHEMES: tuple[str, ...] = ("C+B|Q+U", "C+B|Q|U", "C|B|Q|U")
# Krippendorff (2004): alpha below .667 does not support even tentative conclusions.
LOW_ALPHA = 0.667
PAGE_BOOTSTRAP = 200  # resamples for the page's intervals; the agreement command's --bootstrap takes any
MAX_BOOTSTRAP = 2000
MAX_SCHEMES = 6
DEFAULT_K = 7
DEFAULT_THRESHOLD = 0.5
SHOWN_GROUPS = 100
BATCHES_PER_PAGE = 100
SHOWN = "shown"  # query parameter of the stale note's poll: the data version the page shows
POLL_SECONDS = 2
# The agreement page marks an annotator of a batch with fewer spans than this, or with spans on fewer than this
# share of the batch's samples, while another annotator of the batch has more: a candidate to leave out.
FEW_SPANS = 3
FEW_SPAN_SHARE = 0.10
CATEGORY_COLOURS = {"C": "#4c9a6a", "B": "#7ea6d8", "Q": "#e0a530", "U": "#c8412f"}


def get_project_for_results(user: Any, slug: str) -> tuple[Project, str]:
    """The project, for its admins and auditors; 404 for outsiders, 403 for annotators.

    (Belongs in annotate/access.py beside get_project_for_exporter.)
    """
    project, role = access.get_project_for_user(user, slug)
    if role not in (Role.ADMIN, Role.AUDITOR):
        raise access.Forbidden(
            "Only the project's admins and auditors see agreement and results: they pool every annotator's work"
        )
    return project, role


class BadQuery(ValueError):
    """A query parameter the page cannot use; the message names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


# --------------------------------------------------------------------------- reading the query


def parse_schemes(values: list[str]) -> list[str]:
    """Canonical scheme texts from repeated and/or comma-separated ``scheme`` values; the defaults when none."""
    texts = [part for value in values for part in value.split(",") if part.strip()]
    if not texts:
        return list(DEFAULT_SCHEMES)
    if len(texts) > MAX_SCHEMES:
        raise BadQuery("scheme", f"at most {MAX_SCHEMES} schemes at once")
    schemes = []
    for text in texts:
        try:
            schemes.append(agreement.parse_scheme(text).text)
        except agreement.SchemeError as error:
            raise BadQuery("scheme", str(error)) from None
    return list(dict.fromkeys(schemes))


def parse_choice(raw: str | None, name: str, choices: tuple[str, ...], default: str) -> str:
    value = (raw or "").strip() or default
    if value not in choices:
        raise BadQuery(name, f"unknown {name} {value!r}; use one of {', '.join(choices)}")
    return value


def parse_int(raw: str | None, name: str, default: int, low: int, high: int | None = None) -> int:
    text = (raw or "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise BadQuery(name, f"must be a whole number {bound}, not {text!r}")
    return value


def parse_id(raw: str | None, name: str) -> int:
    text = (raw or "").strip()
    if not text:
        raise BadQuery(name, f"which {name}? give its id, e.g. {name}=12")
    if not text.isdigit() or len(text) > 18:
        raise BadQuery(name, f"{text!r} is not an id")
    return int(text)


def parse_threshold(raw: str | None) -> float:
    text = (raw or "").strip()
    if not text:
        return DEFAULT_THRESHOLD
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise BadQuery("threshold", f"must be a number between 0 and 1, not {text!r}")
    return value


def parse_round(raw: str | None, known: list[int], *, default: int | None) -> int | None:
    text = (raw or "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise BadQuery("round", f"{text!r} is not a round number (1, 2, ...)")
    if int(text) not in known:
        listed = ", ".join(map(str, known)) if known else "none yet"
        raise BadQuery("round", f"the project has no round {int(text)} (rounds with assignments: {listed})")
    return int(text)


def parse_rounds(raw: str | None, known: list[int]) -> list[int]:
    """Every round side by side by default (or for ``all``), else the one asked for."""
    if (raw or "").strip().lower() in ("", "all"):
        return list(known)
    chosen = parse_round(raw, known, default=None)
    return [chosen] if chosen is not None else []


def _render(request: HttpRequest, template: str, context: dict[str, Any], status: int = 200) -> HttpResponse:
    """The whole page, or only its ``results`` partial for htmx."""
    name = f"{template}#results" if request.htmx else template
    return render(request, name, context, status=status)


def _url(name: str, slug: str, **query: Any) -> str:
    params = QueryDict(mutable=True)
    for key, value in query.items():
        if isinstance(value, list):
            params.setlist(key, [str(item) for item in value])
        elif value is not None and value != "":
            params[key] = str(value)
    encoded = params.urlencode()
    return reverse(name, args=[slug]) + (f"?{encoded}" if encoded else "")


def _age(seconds: float, computed_at: Any) -> str:
    if seconds < 60:
        whole = int(seconds)
        return f"{whole} second{'' if whole == 1 else 's'}"
    return timesince(computed_at, depth=1)


def _freshness(request: HttpRequest, served: ServedFigures, poll_url: str, target: str) -> dict[str, Any]:
    """What the stale note shows: the figures' age, and where to poll for the refreshed ones.

    The page polls only when it was not itself the answer to a poll: one
    automatic update per page view, however busy the campaign.
    """
    polled = bool(request.GET.get(SHOWN))
    return {
        "stale": not served.fresh,
        "age": _age(served.age_seconds, served.computed_at),
        "computed_at": served.computed_at,
        "poll_url": None if served.fresh or polled else poll_url,
        "poll_seconds": POLL_SECONDS,
        "target": target,
    }


def _nothing_newer(request: HttpRequest, served: ServedFigures) -> bool:
    """A poll of the stale note while its refresh is still running: answered 204, which htmx does not swap."""
    return bool(request.htmx) and request.GET.get(SHOWN) == served.version and served.refreshing


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
    context: dict[str, Any] = {"project": project, "role": role}
    try:
        batch_id = parse_id(request.GET.get("batch"), "batch")
        round = parse_round(request.GET.get("round"), known, default=known[0] if known else None)
        if round is None:
            raise BadQuery("round", "the project has no round with assignments yet")
        scheme = parse_schemes(request.GET.getlist("scheme") or ["C|B|Q|U"])[0]
    except BadQuery as error:
        return _render(request, "annotate/disputes.html", context | {"error": str(error)}, status=400)
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


# --------------------------------------------------------------------------- results


CHART_LABEL_CHARS = 28  # what fits left of the bars at the chart's font size


def _cut_middle(text: str, limit: int) -> str:
    """Keep the start and the end (where sizes and versions are: "…-70B-Instruct"), drop the middle."""
    if len(text) <= limit:
        return text
    tail = limit // 3
    return text[: limit - tail - 1] + "…" + text[-tail:]


def chart_labels(generators: list[str], limit: int = CHART_LABEL_CHARS) -> dict[str, str]:
    """A short label per generator for the chart: the model name without its organisation
    ("meta-llama/Meta-Llama-3.1-70B-Instruct" -> "Meta-Llama-3.1-70B-Instruct"), cut in the middle when
    still too long. Generators whose short labels would look alike keep their organisation."""
    short = {name: _cut_middle(name.rstrip("/").rsplit("/", 1)[-1] or name, limit) for name in generators}
    counts: dict[str, int] = {}
    for label in short.values():
        counts[label] = counts.get(label, 0) + 1
    return {name: label if counts[label] == 1 else _cut_middle(name, limit) for name, label in short.items()}


def stacked_bars(distribution: dict[str, dict[str, int]], order: list[str]) -> dict[str, Any]:
    """Geometry of the worst-label chart: one 100% bar per generator, segments C, B, Q, U (SVG user units)."""
    label_width, bar_width, bar_height, gap, top = 200, 440, 22, 10, 8
    labels = chart_labels(order)
    bars = []
    for index, generator in enumerate(order):
        counts = distribution.get(generator, {})
        total = counts.get("n", 0)
        y = top + index * (bar_height + gap)
        x = float(label_width)
        segments = []
        for code in agreement.CATEGORIES:
            count = counts.get(code, 0)
            share = count / total if total else 0.0
            width = share * bar_width
            segments.append(
                {
                    "code": code,
                    "name": CATEGORY_NAMES[code],
                    "count": count,
                    "percent": f"{100 * share:.1f}",
                    "x": f"{x:.2f}",
                    "width": f"{width:.2f}",
                    "colour": CATEGORY_COLOURS[code],
                }
            )
            x += width
        bars.append(
            {
                "generator": generator,
                "short": labels[generator],
                "n": total,
                "y": y,
                "text_y": y + bar_height * 0.7,
                "segments": segments,
            }
        )
    legend_y = top + len(order) * (bar_height + gap) + 6
    legend = [
        {"code": code, "name": CATEGORY_NAMES[code], "colour": CATEGORY_COLOURS[code], "x": label_width + 110 * i,
         "text_x": label_width + 110 * i + 18}
        for i, code in enumerate(agreement.CATEGORIES)
    ]
    return {
        "width": label_width + bar_width + 60,
        "height": legend_y + 24,
        "bar_height": bar_height,
        "n_x": label_width + bar_width + 6,
        "label_x": label_width - 8,
        "legend_y": legend_y,
        "legend_text_y": legend_y + 12,
        "bars": bars,
        "legend": legend,
    }


@dataclass
class ResultsQuery:
    round: int | None
    threshold: float
    k: int


def read_results_query(query: QueryDict, known_rounds: list[int]) -> ResultsQuery:
    default_round = 1 if 1 in known_rounds else (known_rounds[0] if known_rounds else None)
    return ResultsQuery(
        round=parse_round(query.get("round"), known_rounds, default=default_round),
        threshold=parse_threshold(query.get("threshold")),
        k=parse_int(query.get("k"), "k", DEFAULT_K, 1),
    )


def results_context(figures: dict[str, Any], query: ResultsQuery) -> dict[str, Any]:
    """Rows of the rates table, the chart, the detector table and the selection (figures: stats.results_figures)."""
    context: dict[str, Any] = {}
    if query.round is not None:
        rates = figures["rates"]
        ranks = rank_generators(rates) if rates else {}
        order = sorted(rates, key=lambda generator: (rates[generator]["U+Q"], generator))
        context["rates"] = [
            {
                "generator": generator,
                "n": rates[generator]["n"],
                "columns": [
                    {"column": column, "rate": rates[generator][column], "rank": ranks[column][generator]}
                    for column in RATE_COLUMNS
                ],
            }
            for generator in order
        ]
        context["chart"] = stacked_bars(figures["distribution"], order) if order else None
        context["detectors"] = [{"name": name, **scores} for name, scores in figures["detectors"].items()]
    selection = figures["selection"]
    context["selection"] = selection
    context["shown_groups"] = selection["kept"][:SHOWN_GROUPS]
    context["rate_columns"] = list(RATE_COLUMNS)
    return context


@require_GET
@login_required
def results_page(request: HttpRequest, slug: str) -> HttpResponse:
    project, role = get_project_for_results(request.user, slug)
    known = stats.project_rounds(project)
    context: dict[str, Any] = {
        "project": project,
        "role": role,
        "is_admin": role == Role.ADMIN,
        "known_rounds": known,
        "form": {
            "round": request.GET.get("round", ""),
            "threshold": request.GET.get("threshold", "") or DEFAULT_THRESHOLD,
            "k": request.GET.get("k", "") or DEFAULT_K,
        },
    }
    try:
        query = read_results_query(request.GET, known)
    except BadQuery as error:
        return _render(request, "annotate/results.html", context | {"error": str(error)}, status=400)
    served = results_cache.serve_figures(project, "results", round=query.round, threshold=query.threshold, k=query.k)
    if _nothing_newer(request, served):
        return HttpResponse(status=204)
    poll = _url("results", project.slug, round=query.round, threshold=query.threshold, k=query.k,
                **{SHOWN: served.version})
    context |= {"query": query, **results_context(served.value, query),
                "freshness": _freshness(request, served, poll, "results-figures")}
    return _render(request, "annotate/results.html", context)


@require_POST
@login_required
def results_selection(request: HttpRequest, slug: str) -> HttpResponse:
    """Admins: new batches holding copies of the kept passage groups' samples (see agreement_admin)."""
    project, _ = access.get_project_for_user(request.user, slug, admin=True)
    back = reverse("results", args=[project.slug])
    try:
        threshold = parse_threshold(request.POST.get("threshold"))
        k = parse_int(request.POST.get("k"), "k", DEFAULT_K, 1)
        per_batch = parse_int(request.POST.get("passages_per_batch"), "passages_per_batch", 5, 1, 1000)
        selection = stats.challenging_groups(project, k, threshold)  # fresh: batches are made from it
        batches = agreement_admin.create_batches_from_selection(
            project,
            [entry["passage_id"] for entry in selection["kept"]],
            request.POST.get("name_prefix", ""),
            passages_per_batch=per_batch,
        )
    except agreement_admin.SelectionAlreadyMade as made:
        # A second press or a double submit: the batches exist, so say so instead of failing.
        messages.info(
            request,
            f"These batches already exist: {len(made.batches)} batches ({made.batches[0].name} … "
            f"{made.batches[-1].name}) from this selection; nothing new was created.",
        )
        back = reverse("project", args=[project.slug])
    except (BadQuery, agreement_admin.AgreementAdminError) as error:
        messages.error(request, f"No batch created. {error}")
        back = _url("results", project.slug, k=request.POST.get("k"), threshold=request.POST.get("threshold"))
    else:
        samples = Sample.objects.filter(batch__in=batches).count()
        messages.success(
            request,
            f"Created {len(batches)} batches ({batches[0].name} … {batches[-1].name}) with {samples} copied samples; "
            "assign annotators on the project page.",
        )
        back = reverse("project", args=[project.slug])
    return HttpResponseClientRedirect(back) if request.htmx else HttpResponseRedirect(back)
