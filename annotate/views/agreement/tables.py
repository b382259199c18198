"""The agreement page's tables from the served figures: alpha per scheme, level and round, the per-batch table
(paged, with each batch's annotators), the pairwise tables, and the span section (token alpha, span F1)."""

from __future__ import annotations

import math
from typing import Any

from annotate import agreement
from annotate.models import Batch, Membership, Project
from annotate.services import results_cache
from annotate.services.results_cache import ServedFigures
from annotate.taxonomy import CATEGORY_NAMES
from annotate.views.agreement.people import agreement_people
from annotate.views.agreement.query import AgreementQuery
from annotate.views.figures import _url

Role = Membership.Role

# Krippendorff (2004): alpha below .667 does not support even tentative conclusions.
LOW_ALPHA = 0.667
BATCHES_PER_PAGE = 100


def _alpha_cell(report: dict[str, Any], **extra: Any) -> dict[str, Any]:
    alpha = report["alpha"]
    return {
        "alpha": alpha,
        "reason": report["reason"],
        "units": report["units"],
        "annotators": report["annotators"],
        "interval": report.get("interval"),
        "batches_note": agreement.batch_mean_note(report),  # batch-mean leaving out undefined batches
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
    people = agreement_people(project, query.rounds, list(batch_ids.values()))
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
