"""The results page (hallucination rates per generator, the worst-label chart, detector scores, the
challenging passage groups) and making new batches from its selection.

Admins and auditors only; the shared query reading and rendering are in annotate.views.figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.urls import reverse
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotate import access, agreement
from annotate.models import Batch, Membership, Sample
from annotate.percent import share_text
from annotate.results import DEFAULT_TRUTH, RATE_COLUMNS, TRUTH_SETS, rank_generators
from annotate.services import agreement_admin, results_cache, stats
from annotate.taxonomy import CATEGORY_NAMES
from annotate.views.figures import (
    DEFAULT_THRESHOLD,
    SHOWN,
    BadQuery,
    _freshness,
    _nothing_newer,
    _render,
    _url,
    each_problem,
    get_project_for_results,
    parse_choice,
    parse_int,
    parse_round,
    parse_threshold,
    read_each,
)

Role = Membership.Role

DEFAULT_K = 7
SHOWN_GROUPS = 100
CATEGORY_COLOURS = {"C": "#4c9a6a", "B": "#7ea6d8", "Q": "#e0a530", "U": "#c8412f"}
# The detector table's truth choices (annotate.results.TRUTH_SETS), as the select and the note beside it say them.
TRUTH_CHOICES = {
    "U": ("U", "Unwanted"),
    "UQ": ("U+Q", "Unwanted or Questionable"),
    "UQB": ("U+Q+B", "Unwanted, Questionable or Benign"),
}


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
                    "percent": share_text(share),
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
    hallucinated: str = DEFAULT_TRUTH


def default_round(known_rounds: list[int]) -> int | None:
    """The round shown when the query names none: 1 where it has assignments, else the first that has."""
    return 1 if 1 in known_rounds else (known_rounds[0] if known_rounds else None)


def read_results_query(query: QueryDict, known_rounds: list[int]) -> ResultsQuery:
    """The page's parameters; BadQueries names every bad one at once."""
    return ResultsQuery(**read_each(
        round=lambda: parse_round(query.get("round"), known_rounds, default=default_round(known_rounds)),
        threshold=lambda: parse_threshold(query.get("threshold")),
        k=lambda: parse_int(query.get("k"), "k", DEFAULT_K, 1),
        hallucinated=lambda: parse_choice(query.get("hallucinated"), "hallucinated", tuple(TRUTH_SETS), DEFAULT_TRUTH),
    ))


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
        context |= unscored_detectors(figures)
    selection = figures["selection"]
    context["selection"] = selection
    context["shown_groups"] = selection["kept"][:SHOWN_GROUPS]
    context["rate_columns"] = list(RATE_COLUMNS)
    context["truth"] = TRUTH_CHOICES[query.hallucinated][1]
    return context


def unscored_detectors(figures: dict[str, Any]) -> dict[str, Any]:
    """The metadata detectors of the project (found over every sample, as the selection reads them) that the round's
    detector table leaves out, and how many samples have a verdict to score them against: so the page says what is
    missing (verdicts, or these detectors' outputs on the judged samples) instead of "no detector outputs"."""
    scored = figures["detectors"]
    return {
        "unscored_detectors": [name for name in figures["selection"]["detectors"] if name not in scored],
        "judged_samples": sum(row["n"] for row in figures["rates"].values()),
    }


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
            "hallucinated": request.GET.get("hallucinated", "") or DEFAULT_TRUTH,
        },
        # What a field shows when the URL leaves its parameter out, for history-forms.js after a Back.
        "defaults": {"round": default_round(known), "threshold": DEFAULT_THRESHOLD, "k": DEFAULT_K,
                     "hallucinated": DEFAULT_TRUTH},
        "truth_choices": [{"value": value, "short": short, "name": name}
                          for value, (short, name) in TRUTH_CHOICES.items()],
    }
    try:
        query = read_results_query(request.GET, known)
    except BadQuery as error:
        return _render(request, "annotate/results.html", context | {"error": str(error), "errors": each_problem(error)},
                       status=400)
    served = results_cache.serve_figures(project, "results", round=query.round, threshold=query.threshold, k=query.k,
                                         hallucinated=query.hallucinated)
    if _nothing_newer(request, served):
        return HttpResponse(status=204)
    poll = _url("results", project.slug, round=query.round, threshold=query.threshold, k=query.k,
                hallucinated=query.hallucinated, **{SHOWN: served.version})
    context |= {"query": query, **results_context(served.value, query),
                "freshness": _freshness(request, served, poll, "results-figures")}
    return _render(request, "annotate/results.html", context)


def _counted(count: int, singular: str, plural: str) -> str:
    """"1 batch", "2 batches": the noun agrees with the number (ngettext, so a translation can too)."""
    return f"{count} {ngettext(singular, plural, count)}"


def _batch_names(batches: list[Batch]) -> str:
    """The first and last of a run of batches; a single batch by its own name, not "b … b"."""
    return batches[0].name if len(batches) == 1 else f"{batches[0].name} … {batches[-1].name}"


@require_POST
@login_required
def results_selection(request: HttpRequest, slug: str) -> HttpResponse:
    """Admins: new batches holding copies of the kept passage groups' samples (see agreement_admin)."""
    project, _ = access.get_project_for_user(request.user, slug, admin=True)
    back = reverse("results", args=[project.slug])
    try:
        form = read_each(
            threshold=lambda: parse_threshold(request.POST.get("threshold")),
            k=lambda: parse_int(request.POST.get("k"), "k", DEFAULT_K, 1),
            per_batch=lambda: parse_int(request.POST.get("passages_per_batch"), "passages_per_batch", 5, 1, 1000),
        )
        selection = stats.challenging_groups(project, form["k"], form["threshold"])  # fresh: batches are made from it
        batches = agreement_admin.create_batches_from_selection(
            project,
            [entry["passage_id"] for entry in selection["kept"]],
            request.POST.get("name_prefix", ""),
            passages_per_batch=form["per_batch"],
        )
    except agreement_admin.SelectionAlreadyMade as made:
        # A second press or a double submit: the batches exist, so say so instead of failing.
        made_count = len(made.batches)
        messages.info(
            request,
            f"{ngettext('This batch already exists', 'These batches already exist', made_count)}: "
            f"{_counted(made_count, 'batch', 'batches')} ({_batch_names(made.batches)}) from this selection; "
            "nothing new was created.",
        )
        back = reverse("project", args=[project.slug])
    except (BadQuery, agreement_admin.AgreementAdminError) as error:
        messages.error(request, f"No batch created. {error}")
        back = _url("results", project.slug, k=request.POST.get("k"), threshold=request.POST.get("threshold"),
                    hallucinated=request.POST.get("hallucinated"))
    else:
        samples = Sample.objects.filter(batch__in=batches).count()
        messages.success(
            request,
            f"Created {_counted(len(batches), 'batch', 'batches')} ({_batch_names(batches)}) with "
            f"{_counted(samples, 'copied sample', 'copied samples')}; assign annotators on the project page.",
        )
        back = reverse("project", args=[project.slug])
    return HttpResponseClientRedirect(back) if request.htmx else HttpResponseRedirect(back)
