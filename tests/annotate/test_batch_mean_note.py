"""A batch-mean alpha averages only the batches whose alpha is defined: the agreement page's main cell, the
``agreement`` command's summary line and the API say how many batches it averages and how many it leaves out.

On the results scene (tests/annotate/results_scene.py), batch-1 and batch-2 have defined alphas; a third batch
submitted by alice alone has none (one annotator), so the batch-mean is the mean of 2 of 3 batches.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command

from annotate import agreement
from annotate.models import Assignment, Batch, Passage, Sample
from annotate.services import stats
from tests.annotate.results_scene import span, tags
from tests.conftest import login

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords")]

NOTE = "mean of 2 of 3 batches; 1 undefined (left out of the mean)"


@pytest.fixture
def lonely(scene: dict[str, Any]) -> dict[str, Any]:
    batch = Batch.objects.create(project=scene["project"], name="batch-3", position=2)
    passage = Passage.objects.create(project=scene["project"], external_id="p3", text="A third source.")
    sample = Sample.objects.create(project=scene["project"], passage=passage, batch=batch, position=0,
                                   external_id="u0", summary="A lonely summary with words.", generator="model-a")
    Assignment.objects.create(batch=batch, annotator=scene["alice"], status=Assignment.Status.SUBMITTED)
    span(sample, scene["alice"], ["Unwanted"])
    return scene


def test_the_report_counts_the_batches_the_mean_averages_and_leaves_out(lonely: dict[str, Any]) -> None:
    report = stats.project_agreement(lonely["project"], "C|B|Q|U", "nominal", "batch-mean", 1)
    defined = [entry["alpha"] for entry in report["per_batch"] if entry["alpha"] is not None]
    assert len(defined) == 2 and report["alpha"] == pytest.approx(sum(defined) / 2)
    assert (report["batches_defined"], report["batches_undefined"]) == (2, 1)
    assert agreement.batch_mean_note(report) == NOTE
    # Pooled has no batch count: nothing is averaged.
    pooled = stats.project_agreement(lonely["project"], "C|B|Q|U", "nominal", "pooled", 1)
    assert "batches_defined" not in pooled and agreement.batch_mean_note(pooled) is None


def test_a_mean_over_every_batch_says_nothing_more(scene: dict[str, Any]) -> None:
    report = stats.project_agreement(scene["project"], "C|B|Q|U", "nominal", "batch-mean", 1)
    assert (report["batches_defined"], report["batches_undefined"]) == (2, 0)
    assert agreement.batch_mean_note(report) is None


def test_the_command_summary_line_says_a_batch_was_left_out(lonely: dict[str, Any]) -> None:
    printed = io.StringIO()
    call_command("agreement", "--project", "demo", "--scheme", "C|B|Q|U", "--level", "nominal",
                 "--aggregate", "batch-mean", stdout=printed)
    summary = printed.getvalue().splitlines()[1]
    assert summary.startswith("alpha = ") and summary.endswith(f"({NOTE})")
    printed = io.StringIO()
    call_command("agreement", "--project", "demo", "--scheme", "C|B|Q|U", "--level", "nominal",
                 "--aggregate", "pooled", stdout=printed)
    assert "batches" not in printed.getvalue().splitlines()[1]


def test_the_api_gives_the_counts_and_the_schema_describes_them(lonely: dict[str, Any]) -> None:
    client = login(lonely["admin"])
    report = client.get("/api/projects/demo/agreement/",
                        {"scheme": "C|B|Q|U", "aggregate": "batch-mean"}).json()
    assert (report["batches_defined"], report["batches_undefined"]) == (2, 1)
    document = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    fields = document["components"]["schemas"]["AgreementReport"]["properties"]
    assert "batch-mean only" in fields["batches_undefined"]["description"]


def test_the_agreement_page_cell_says_a_batch_was_left_out(lonely: dict[str, Any]) -> None:
    client = login(lonely["admin"])
    response = client.get("/projects/demo/agreement/",
                          {"scheme": "C|B|Q|U", "level": "nominal", "aggregate": "batch-mean", "round": "1"})
    assert response.status_code == 200
    html = response.content.decode()
    cell = html.split('data-scheme="C|B|Q|U" data-round="1" data-level="nominal"', 1)[1].split("</td>", 1)[0]
    assert f'<span class="muted small" data-role="batches-note">{NOTE}</span>' in cell
    pooled = client.get("/projects/demo/agreement/",
                        {"scheme": "C|B|Q|U", "level": "nominal", "aggregate": "pooled", "round": "1"})
    assert not tags(pooled).find(data_role="batches-note")
