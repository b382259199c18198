"""A judge against the people who audited its flagged outputs (admins): alpha, confusion, residuals, flags."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET

from judging import access
from judging.models.judges import SCORE_LABELS
from judging.people import ALPHA_LEVELS, LEVELS, median_example
from judging.services.people import judge_vs_people


@require_GET
@login_required
def people_page(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    judge = access.get_judge_for_admin(request.user, slug, pk)
    figures = judge_vs_people(judge.project, judge)
    confusion = [
        {"level": level, "label": SCORE_LABELS[level], "counts": counts}
        for level, counts in zip(LEVELS, figures["confusion"], strict=True)
    ]
    alphas = [
        {"level": level, "cells": [
            {"role": role, "value": figures[key], "items": figures[f"{key}_items"], "reason": figures["reasons"].get(key)}
            for role, key in (("alpha-with-judge", f"alpha_{level}_with_judge"), ("alpha-auditors", f"alpha_{level}_auditors"))
        ]}
        for level in ALPHA_LEVELS
    ]
    return render(
        request,
        "judging/people.html",
        {"project": judge.project, "judge": judge, "figures": figures, "alphas": alphas, "confusion": confusion,
         "levels": LEVELS, "median_example": median_example(figures["llm_flag_at_most"])},
    )


urlpatterns = [
    path("projects/<slug:slug>/judges/<int:pk>/people/", people_page, name="judging-people"),
]
