"""Detectors are listed by name, case-insensitively, everywhere: the results page, its selection, the detector-eval
API and the ``detector_eval`` command.

They used to follow the metadata's key order, which PostgreSQL's jsonb sorts (by length, then bytes) while SQLite
keeps it as written: the same project listed its detectors in two orders. The names below are written in an order
that is neither sorted nor jsonb's, and have different lengths and cases, so any key order shows.
"""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command

from annotate import results
from annotate.models import Assignment, Batch, Project
from annotate.services import stats
from judging.models import Judge, Judgement, JudgeRun
from tests.conftest import login
from tests.judging.audit_helpers import read_html

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords")]

# As written in the metadata: not sorted, not by length.
WRITTEN = ["zeta", "HHEM-2.1", "gpt_4o", "Alpha", "b"]
BY_NAME = ["Alpha", "b", "gpt_4o", "HHEM-2.1", "zeta"]
JUDGE = "judge:Aardvark"  # a judge (judging app) sorts among them by its name as a detector
EVERY = ["Alpha", "b", "gpt_4o", "HHEM-2.1", JUDGE, "zeta"]


def outputs_of(position: int, keys: list[str]) -> dict[str, Any]:
    values = {"zeta": 0.2 + 0.3 * position, "HHEM-2.1": 0.9 - 0.3 * position, "gpt_4o": position % 2,
              "Alpha": 0.5, "b": 1 - position % 2}
    return {"summarizer": "model", **{key: values[key] for key in keys}}


def test_the_written_orders_are_neither_sorted_nor_by_length() -> None:
    assert WRITTEN != BY_NAME
    assert sorted(WRITTEN, key=lambda key: (len(key), key)) != BY_NAME  # jsonb's order


def test_detector_keys_are_sorted_by_name_whatever_the_key_order() -> None:
    metadatas = [outputs_of(0, WRITTEN), outputs_of(1, WRITTEN[::-1]), outputs_of(2, WRITTEN[2:] + WRITTEN[:2])]
    assert results.detector_keys(metadatas) == BY_NAME
    outputs = results.classify_detector_outputs(metadatas)
    assert outputs.detector_keys(np.arange(3)) == BY_NAME
    assert outputs.detector_keys(np.array([2, 0])) == BY_NAME
    truths = ["U", "C", "Q"]
    assert list(results.evaluate_detector_outputs(outputs, np.arange(3), truths)) == BY_NAME
    predictions = {key: {row: metadatas[row][key] for row in range(3)} for key in WRITTEN}
    assert list(results.evaluate_detectors(predictions, dict(enumerate(truths)))) == BY_NAME


def test_names_equal_but_for_case_keep_one_order() -> None:
    assert results.detector_order(["hhem", "HHEM", "Gpt", "gpt"]) == ["Gpt", "gpt", "HHEM", "hhem"]
    assert results.detector_order(["HHEM", "hhem", "gpt", "Gpt"]) == ["Gpt", "gpt", "HHEM", "hhem"]


@pytest.fixture
def detectors_project(project: Project, batch: Batch) -> Project:
    """The conftest batch, submitted, each sample's detectors written in another order, and one judge."""
    samples = list(batch.samples.order_by("position"))
    orders = [WRITTEN, WRITTEN[::-1], WRITTEN[1:] + WRITTEN[:1]]
    for sample, keys in zip(samples, orders, strict=True):
        sample.metadata = outputs_of(sample.position, keys)
        sample.save()
    Assignment.objects.filter(batch=batch).update(status=Assignment.Status.SUBMITTED)
    judge = Judge.objects.create(project=project, name="Aardvark", kind=Judge.Kind.RUBRIC,
                                 base_url="http://127.0.0.1:9/v1", model="m")
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE)
    for sample, score in zip(samples, (4, 2, 5), strict=True):
        Judgement.objects.create(run=run, sample=sample, status="ok", score=score)
    return project


def test_detector_eval_and_its_api_list_every_detector_by_name(detectors_project: Project, admin_user: Any) -> None:
    assert list(stats.project_detector_eval(detectors_project)) == EVERY
    response = login(admin_user).get("/api/projects/demo/detector-eval/")
    assert response.status_code == 200
    assert list(json.loads(response.content)) == EVERY  # the JSON object's keys, in the order sent


def test_the_detector_eval_command_prints_the_detectors_by_name(detectors_project: Project) -> None:
    printed = io.StringIO()
    call_command("detector_eval", "--project", "demo", "--json", stdout=printed)
    assert list(json.loads(printed.getvalue())) == EVERY
    table = io.StringIO()
    call_command("detector_eval", "--project", "demo", stdout=table)
    first_words = [line.split()[0] for line in table.getvalue().splitlines()[2:2 + len(EVERY)]]
    assert first_words == EVERY


def test_the_results_page_lists_the_detectors_and_the_selections_by_name(
    detectors_project: Project, admin_user: Any
) -> None:
    response = login(admin_user).get("/projects/demo/results/")
    assert response.status_code == 200
    page = read_html(response.content)
    assert [row.attrs["data-detector"] for row in page.find("tr") if "data-detector" in row.attrs] == EVERY
    selection = " ".join(page.one("p", data_role="selection-summary").text.split())
    assert f"detectors: {', '.join(BY_NAME)}" in selection  # the judges stay out of the selection
