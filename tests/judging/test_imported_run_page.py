"""An imported run's page says once that it was imported, and words latency and cost as what the file reported,
never as calls this server made (it made none)."""

from __future__ import annotations

import json
import re
from html import unescape
from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Batch, Project
from judging.models import Judge, JudgeRun
from judging.services.ingest import import_judgements
from tests.conftest import login

pytestmark = pytest.mark.django_db

LATENCIES = [2.5, 3.0, 4.169]  # mean 3.223
COSTS = [0.02, 0.03, 0.0225]  # 0.0725


def text_of(html: str) -> str:
    """The page's words, tags dropped and spaces squeezed."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def figure(html: str, name: str) -> str:
    row = re.search(rf'<tr data-figure="{name}">(.*?)</tr>', html, re.S)
    assert row is not None, f"no figure {name}"
    return text_of(row.group(1))


@pytest.fixture
def imported_run(project: Project, batch: Batch, admin_user: Any) -> JudgeRun:
    lines = [{"sample": str(index), "judge": "gpt-4o-rubric", "score": 4, "latency": latency, "cost": cost,
              "input_tokens": 800, "output_tokens": 100}
             for index, (latency, cost) in enumerate(zip(LATENCIES, COSTS, strict=True))]
    import_judgements(project, [("judged.jsonl", "\n".join(json.dumps(line) for line in lines))], by=admin_user)
    return JudgeRun.objects.get(judge__kind=Judge.Kind.IMPORTED)


def test_the_page_says_once_that_the_run_was_imported_by_whom_and_when(
    project: Project, admin_user: Any, imported_run: JudgeRun
) -> None:
    html = login(admin_user).get(reverse("judging-run", args=[project.slug, imported_run.pk])).content.decode()
    words = text_of(html)
    assert words.count("Imported judge outputs") == 1
    when = imported_run.created_at.strftime("%Y-%m-%d")
    assert re.search(rf"Imported judge outputs: 3 judgements read from a file by adam on {when} \d\d:\d\d", words)
    assert "No call was made here" in words


def test_latency_and_cost_are_worded_as_the_file_reported_them_with_units(
    project: Project, admin_user: Any, imported_run: JudgeRun
) -> None:
    html = login(admin_user).get(reverse("judging-run", args=[project.slug, imported_run.pk])).content.decode()
    assert "3.223 s over 3 judgements, as imported" in figure(html, "mean_latency")
    assert "0.0725, as imported" in figure(html, "cost") and "file reported" in figure(html, "cost")
    # No figure counts calls or requests this server sent: it sent none, and nothing says "calls" beside 0.
    assert 'data-figure="calls"' not in html and 'data-figure="retried"' not in html
    assert "of the calls sent" not in html and "over 3 calls" not in html
    counts = re.search(r'data-role="run-counts">(.*?)</span>', html, re.S)
    assert counts is not None and text_of(counts.group(1)) == "scored 3 · failed 0"


def test_a_run_made_here_keeps_its_call_figures_with_the_latency_unit(
    project: Project, admin_user: Any, batch: Batch
) -> None:
    judge = Judge.objects.create(project=project, name="local", kind=Judge.Kind.RUBRIC, base_url="http://x/v1",
                                 model="m")
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE, total=3, done=3,
                                  scored=3, calls=3)
    for sample, latency in zip(batch.samples.order_by("position"), LATENCIES, strict=True):
        run.judgements.create(sample=sample, status="ok", score=4, latency_seconds=latency, attempts=1)
    html = login(admin_user).get(reverse("judging-run", args=[project.slug, run.pk])).content.decode()
    assert figure(html, "calls").endswith(" 3")
    assert figure(html, "mean_latency").endswith("3.223 s over 3 calls")
    assert "Imported" not in text_of(html)


def test_the_judges_page_lists_an_imported_run_as_imported_without_call_counts(
    project: Project, admin_user: Any, imported_run: JudgeRun
) -> None:
    html = login(admin_user).get(reverse("judging-judges", args=[project.slug])).content.decode()
    row = re.search(rf'<div[^>]*id="run-{imported_run.pk}".*?</div>', html, re.S)
    assert row is not None
    words = text_of(row.group(0))
    assert words.count("imported") == 1 and "calls" not in words and "Imported judge outputs" not in words
