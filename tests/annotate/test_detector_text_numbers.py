"""A detector value written as text ("0.21") is invalid, never a reason to drop the detector from the evaluation.

In a two-sample FaithBench project one such value tied the old majority rule (one score, one string) and
``hhem-2.1`` vanished from the table, the command and the page.
"""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Membership, Project
from annotate.results import detector_keys, evaluate_detectors, is_score_text
from annotate.services import ingest, stats
from tests.annotate.results_scene import tags
from tests.conftest import login

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords")]


@pytest.fixture
def text_number(admin_user: Any) -> Project:
    """The example FaithBench batch (two samples, both hallucinated) with sample 0's hhem-2.1 written as "0.21"."""
    from tests.annotate.test_ingest import example  # a test module: imported when the fixture is used

    document = example()
    document["samples"][0]["metadata"]["hhem-2.1"] = "0.21"
    project = Project.objects.create(name="FaithBench", slug="fb")
    Membership.objects.create(project=project, user=admin_user, role=Membership.Role.ADMIN)
    ingest.import_files(project, [("batch_1.json", json.dumps(document).encode())])
    return project


def test_a_tie_between_a_score_and_a_score_written_as_text_keeps_the_detector() -> None:
    metadatas = [{"hhem-2.1": "0.21", "gpt_4o": 0}, {"hhem-2.1": 0.77, "gpt_4o": 1}]
    assert detector_keys(metadatas) == ["gpt_4o", "hhem-2.1"]  # by name
    report = evaluate_detectors({"hhem-2.1": {0: "0.21", 1: 0.77}}, {0: "U", 1: "Q"})
    assert (report["hhem-2.1"]["n"], report["hhem-2.1"]["invalid"], report["hhem-2.1"]["missing"]) == (1, 1, 0)


@pytest.mark.parametrize(("value", "expected"), [
    ("0.21", True), (" 1 ", True), ("0", True), ("1e-1", True),
    ("1.5", False), ("-0.1", False), ("nan", False), ("inf", False), ("n/a", False), ("", False), (0.21, False),
])
def test_a_score_written_as_text_is_a_number_in_0_to_1_in_a_string(value: Any, expected: bool) -> None:
    assert is_score_text(value) is expected


def test_text_fields_and_ids_are_still_not_detectors() -> None:
    metadatas = [{"note": "x", "raw_sample_id": 7, "hhem": 0.4}, {"note": "0.5 maybe", "raw_sample_id": 8, "hhem": 0.6}]
    assert detector_keys(metadatas) == ["hhem"]


def test_detector_eval_keeps_the_detector_and_counts_the_text_value_invalid(text_number: Project) -> None:
    report = stats.project_detector_eval(text_number)
    # As a set: the order is the metadata's key order, which PostgreSQL's jsonb does not keep.
    assert set(report) == {"hhem-2.1", "gpt_4o"}
    hhem = report["hhem-2.1"]
    assert (hhem["n"], hhem["invalid"], hhem["missing"], hhem["rule"]) == (1, 1, 0, "p >= 0.5")
    assert report["gpt_4o"]["n"] == 2 and report["gpt_4o"]["invalid"] == 0

    printed = StringIO()
    call_command("detector_eval", "--project", "fb", "--json", stdout=printed)
    assert json.loads(printed.getvalue())["hhem-2.1"] == hhem
    table = StringIO()
    call_command("detector_eval", "--project", "fb", stdout=table)
    assert 'numbers written as text ("0.21")' in table.getvalue()


def test_the_results_page_lists_the_detector_and_says_why_a_value_is_invalid(
    text_number: Project, admin_user: Any
) -> None:
    response = login(admin_user).get("/projects/fb/results/")
    assert response.status_code == 200
    rows = {row["data-detector"]: row for row in tags(response).find("tr") if "data-detector" in row}
    assert set(rows) == {"hhem-2.1", "gpt_4o"}
    html = response.content.decode()
    row = html.split('data-detector="hhem-2.1"', 1)[1].split("</tr>", 1)[0]
    assert 'data-metric="invalid">1<' in row and 'data-metric="n">1<' in row
    assert 'a number written as\n      text such as "0.21", which is not read as a number' in html
