"""A run's judgements come in the order a person expects, the samples' order in the project (each batch's
position, then each sample's position in its batch, then the judgement's id), never the order the calls finished:
the same in the run's judgements API, on the run's page, in the exports and in ``judge --json``."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Batch, Passage, Project, Sample
from judging.models import Judge, Judgement, JudgeRun
from judging.services.export import export_lines
from judging.services.runs import run_summary
from tests.conftest import login

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished_out_of_order(project: Project) -> tuple[JudgeRun, list[str]]:
    """Two batches made in the reverse of their positions, samples made in the reverse of their positions, and the
    judgements written in yet another order (as calls finish); returns the run and the expected external ids."""
    passage = Passage.objects.create(project=project, external_id="p", text="The source.")
    second = Batch.objects.create(project=project, name="second", position=1)
    first = Batch.objects.create(project=project, name="first", position=0)
    samples = {}
    for batch, prefix in ((second, "b"), (first, "a")):
        for position in (2, 1, 0):
            external_id = f"{prefix}{position}"
            samples[external_id] = Sample.objects.create(project=project, batch=batch, passage=passage,
                                                         position=position, external_id=external_id,
                                                         summary=f"Output {external_id}.")
    judge = Judge.objects.create(project=project, name="loop", kind=Judge.Kind.RUBRIC, base_url="http://127.0.0.1:9/v1",
                                 model="m")
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE, total=6, done=6)
    for external_id in ("b1", "a2", "b0", "a0", "b2", "a1"):  # the order the answers came back
        Judgement.objects.create(run=run, sample=samples[external_id], status="ok", score=4)
    return run, ["a0", "a1", "a2", "b0", "b1", "b2"]


def test_the_api_lists_a_run_s_judgements_in_the_samples_order(
    finished_out_of_order: tuple[JudgeRun, list[str]], admin_user: Any
) -> None:
    run, expected = finished_out_of_order
    client = login(admin_user)
    rows = client.get(f"/api/judge-runs/{run.pk}/judgements/").json()["results"]
    assert [row["sample_external_id"] for row in rows] == expected
    # Page by page too: the order holds across pages.
    paged = [client.get(f"/api/judge-runs/{run.pk}/judgements/?limit=2&offset={offset}").json()["results"]
             for offset in (0, 2, 4)]
    assert [row["sample_external_id"] for page in paged for row in page] == expected


def test_the_run_page_lists_them_in_the_samples_order(
    finished_out_of_order: tuple[JudgeRun, list[str]], admin_user: Any
) -> None:
    run, expected = finished_out_of_order
    html = login(admin_user).get(reverse("judging-run", args=[run.project.slug, run.pk])).content.decode()
    table = html.split('data-role="judgements"', 1)[1]
    shown = [row.split("</a>", 1)[0].rsplit(">", 1)[1] for row in table.split("<tr data-judgement=")[1:]]
    assert shown == expected


def test_the_exports_and_judge_json_list_them_in_the_samples_order(
    finished_out_of_order: tuple[JudgeRun, list[str]]
) -> None:
    run, expected = finished_out_of_order
    for format in ("jsonl", "csv"):
        text = "".join(export_lines(run.project, what="judgements", format=format, run=run))
        if format == "jsonl":
            shown = [json.loads(line)["sample"] for line in io.StringIO(text)]
        else:
            shown = [line.split(",", 1)[0] for line in text.splitlines()[1:]]
        assert shown == expected, format
    assert [entry["sample"] for entry in run_summary(run)["judgements"]] == expected
