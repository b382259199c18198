"""The detector figures say which truth set they were computed against (hallucinated = U, UQ or UQB) without
changing their body, a map of detectors where one more key would read as one more detector: the API in the
``X-FaithLab-Hallucinated`` header (documented in the schema), ``detector_eval --json`` in a line on stderr, its
stdout the same JSON as before.

The scene is tests/annotate/results_scene.py's, as in test_detector_truth.py."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import call_command

from tests.conftest import login

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords")]


@pytest.mark.parametrize(("asked", "used"), [({}, "UQ"), ({"hallucinated": "U"}, "U"), ({"hallucinated": "UQB"}, "UQB")])
def test_the_api_names_the_truth_set_in_a_header_and_the_body_stays_a_map_of_detectors(
    scene: dict[str, Any], asked: dict[str, str], used: str
) -> None:
    response = login(scene["admin"]).get("/api/projects/demo/detector-eval/", asked)
    assert response.status_code == 200
    assert response["X-FaithLab-Hallucinated"] == used
    assert set(response.json()) == {"hhem", "gpt"}  # detectors only


def test_a_refused_query_names_no_truth_set(scene: dict[str, Any]) -> None:
    response = login(scene["admin"]).get("/api/projects/demo/detector-eval/", {"hallucinated": "all"})
    assert response.status_code == 400 and "X-FaithLab-Hallucinated" not in response


def test_the_schema_documents_the_header(scene: dict[str, Any]) -> None:
    document = login(scene["admin"]).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operation = document["paths"]["/api/projects/{slug}/detector-eval/"]["get"]
    header = operation["responses"]["200"]["headers"]["X-FaithLab-Hallucinated"]
    assert header["schema"]["enum"] == ["U", "UQ", "UQB"] and "truth set" in header["description"]
    assert "X-FaithLab-Hallucinated" not in {parameter["name"] for parameter in operation["parameters"]}


@pytest.mark.parametrize(("asked", "used"), [((), "UQ"), (("--hallucinated", "U"), "U")])
def test_the_command_names_the_truth_set_on_stderr_and_prints_the_same_json(
    scene: dict[str, Any], asked: tuple[str, ...], used: str
) -> None:
    out, err = io.StringIO(), io.StringIO()
    call_command("detector_eval", "--project", "demo", *asked, "--json", stdout=out, stderr=err)
    assert set(json.loads(out.getvalue())) == {"hhem", "gpt"}
    assert f"hallucinated={used} " in err.getvalue()
    assert "round 1" in err.getvalue() and "threshold 0.5" in err.getvalue()
