"""``halu_rates`` and ``detector_eval`` print the results API's objects, also for a round with undefined figures.

Before round 2 is submitted the commands printed ``{}`` for the rates and dropped the metadata detectors, while
the API lists every generator and detector with n 0, null figures and a reason. Both now read
stats.explained_halu_rates and stats.explained_detector_eval.
"""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Assignment
from tests.annotate.test_api_round_two_figures import api, round_two  # noqa: F401  (round_two: a fixture)

# round_two (imported above) opens round 2 of the scene's batch-1, nobody done with it, and adds a judge.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords", "round_two")]


def command(name: str, *options: str) -> str:
    printed = StringIO()
    call_command(name, "--project", "demo", *options, stdout=printed)
    return printed.getvalue()


def both_figures(scene: dict[str, Any]) -> None:
    assert json.loads(command("halu_rates", "--round", "2", "--json")) == api(scene, "halu-rates")
    assert json.loads(command("detector_eval", "--round", "2", "--json")) == api(scene, "detector-eval")


def test_before_round_two_is_submitted_the_commands_print_the_apis_objects(scene: dict[str, Any]) -> None:
    both_figures(scene)
    rates = json.loads(command("halu_rates", "--round", "2", "--json"))
    assert set(rates) == {"model-a", "model-b", "model-c"} and all(row["n"] == 0 for row in rates.values())
    # The tables list every generator and detector too, each with its reason.
    table = command("halu_rates", "--round", "2")
    for generator, row in rates.items():
        assert f"{generator}: {row['reason']}" in table
    report = json.loads(command("detector_eval", "--round", "2", "--json"))
    detectors = command("detector_eval", "--round", "2")
    for name in ("gpt", "hhem", "judge:Aardvark"):
        assert f"{name}: {report[name]['reason']}" in detectors


def test_once_round_two_is_submitted_the_commands_still_print_the_apis_objects(scene: dict[str, Any]) -> None:
    Assignment.objects.filter(batch=scene["batch1"], round=2).update(status=Assignment.Status.SUBMITTED)
    both_figures(scene)
    rates = json.loads(command("halu_rates", "--round", "2", "--json"))
    assert all(row["n"] > 0 and "reason" not in row for row in rates.values())
    assert "reason" not in command("halu_rates", "--round", "2")
