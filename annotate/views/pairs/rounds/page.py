"""A round's page (its agreement, the detector's metrics, the balance reached, the funnel and the items drawn),
and who may open the rounds' pages at all (pairs_project)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotate import access
from annotate.models import PairRound, Project
from annotate.percent import share_text
from annotate.services.pairs import agreement, rounds
from annotate.services.pairs.overview import sees_figures
from annotate.views.pairs.rounds.words import (
    funnel_rows,
    ratio_context,
    selection_balance_words,
    selection_in_words,
)

ITEMS_PER_PAGE = 100


def pairs_project(request: HttpRequest, slug: str, *, admin: bool) -> tuple[Project, str]:
    """The pairs project and the user's role in it, for the rounds' pages: its admins (``admin``) or its reviewers
    (sees_figures); other roles 403, outsiders and span projects 404 (annotate.access)."""
    project, role = access.get_pairs_project_for_user(request.user, slug, admin=admin)
    if not sees_figures(role):
        raise access.Forbidden("Annotators work blind: rounds are for the project's admins and reviewers")
    return project, role


# Metrics of the HaDes tables, in the order the round page lists them; why one is undefined is the service's
# (rounds.METRIC_UNDEFINED, in the report's ``metrics_undefined``), which the API gives too.
METRICS = [
    ("n", "Consensus items scored"),
    ("accuracy", "Accuracy"),
    ("precision_h", "Precision, H"),
    ("recall_h", "Recall, H"),
    ("f1_h", "F1, H"),
    ("precision_n", "Precision, N"),
    ("recall_n", "Recall, N"),
    ("f1_n", "F1, N"),
    ("g_mean", "G-mean, √(recall H × recall N)"),
    ("auc", "AUC of P(H)"),
    ("brier", "Brier score of P(H)"),
]


def metric_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The round report's metrics as the page's rows: name, value to 3 decimals, and why an undefined one is."""
    metrics, undefined = report["metrics"], report["metrics_undefined"]
    rows = []
    for key, name in METRICS:
        value = metrics.get(key) if metrics else None
        if value is not None and key != "n":
            value = f"{value:.3f}"
        rows.append({"key": key, "name": name, "value": value, "why": undefined.get(key)})
    return rows


def balance_words(report: dict[str, Any]) -> dict[str, str]:
    """The H share reached among the round's consensus items beside the share the subsampling promised."""
    balance, undefined = report["balance"], report["balance_undefined"]
    promised = balance.get("promised_h_share")
    h, n, share = balance.get("h", 0), balance.get("n", 0), balance.get("h_share")
    return {
        "promised": f"{share_text(promised)} H" if promised is not None
        else f"— ({undefined['promised_h_share']})",
        "reached": f"{share_text(share)} H ({h} H, {n} N)" if share is not None
        else f"— ({undefined['h_share']})",
        "note": "The promise holds in expectation, if the detector errs on the pool as it did on the counts "
                "behind R." if promised is not None else "",
    }


@require_GET
@login_required
def round_page(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    project, _ = pairs_project(request, slug, admin=False)
    pair_round = PairRound.objects.filter(project=project, number=number).select_related("detector", "created_by").first()
    if pair_round is None:
        raise Http404(f"{project.name} has no round {number}")
    report = rounds.round_report(pair_round)
    items = pair_round.items.order_by("id")
    page = Paginator(items, ITEMS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "project": project,
        "pair_round": pair_round,
        "agreement": agreement.current_pair_agreement(project, pair_round.number),
        "metric_rows": metric_rows(report),
        "metrics_intro": report["metrics_reason"],
        "balance": balance_words(report),
        "selection_balance": selection_balance_words(report["selection_balance"]),
        "ratio": ratio_context(pair_round.ratio if pair_round.ratio.get("action") else None),
        "ratio_source": pair_round.ratio.get("counts_from"),
        "round_one": pair_round.number == 1,
        "funnel": funnel_rows(pair_round.funnel),
        "page": page,
        "rows": [{"item": item, "why": selection_in_words(item.selection)} for item in page],
    }
    return render(request, "annotate/pairs/round.html", context)
