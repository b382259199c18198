"""What the figures' data version (annotate.services.results_cache) must also see, so that figures served "current"
never are stale: a judge renamed (detectors are named after judges), and a blocked judge swapped for an unblocked one
with as many judgements. And many API queries (a threshold sweep) never push the results pages' kept figures out, and
a database that cannot keep figures still answers with them."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError

from annotate.models import FigureSet, PairJudgement
from annotate.services import results_cache
from judging.models import Judge

pytestmark = pytest.mark.django_db


def test_renaming_a_judge_changes_the_data_version(project: Any) -> None:
    judge = Judge.objects.create(project=project, name="old", kind="imported")
    before = results_cache.data_version(project)
    judge.name = "new"
    judge.save(update_fields=["name"])
    assert results_cache.data_version(project) != before


def test_the_counted_pair_judgements_part_is_an_id_sum(project: Any, monkeypatch: Any) -> None:
    # Counting them would miss one judgement un-counted and another counted at once; their ids differ.
    calls: list[dict[str, Any]] = []
    real = PairJudgement.objects.aggregate

    def recording(**parts: Any) -> Any:
        calls.append(parts)
        return real(**parts)

    monkeypatch.setattr(PairJudgement.objects, "aggregate", recording)
    results_cache._pair_parts()
    [parts] = calls
    assert type(parts["counted"]).__name__ == "Sum"


def test_api_queries_never_push_the_page_figures_out(batch: Any, settings: Any) -> None:
    project = batch.project
    settings.FIGURES_KEPT_PER_PROJECT = 3
    results_cache.compute_figure_set(project, "results", {"round": 1, "threshold": 0.5, "k": 3})
    for threshold in (0.1, 0.2, 0.3, 0.4, 0.5):
        results_cache.current_figures(project, "api-detector-eval", threshold=threshold)
    assert FigureSet.objects.filter(project=project, kind="results").count() == 1
    assert FigureSet.objects.filter(project=project, kind="api-detector-eval").count() == 3


def test_figures_that_cannot_be_kept_are_still_answered(batch: Any, monkeypatch: Any) -> None:
    project = batch.project
    def locked(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("database is locked")

    monkeypatch.setattr(FigureSet.objects, "create", locked)
    value = results_cache.current_figures(project, "api-halu-rates")
    assert isinstance(value, dict) and value
    assert not FigureSet.objects.filter(project=project, kind="api-halu-rates").exists()
