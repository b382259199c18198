"""The results page names every bad parameter at once (changing nothing), and its messages about the
batches it made agree in number ("1 batch", "2 batches"). The scene is in results_scene.py."""

from __future__ import annotations

import re
from typing import Any

import pytest

from annotate.models import Batch, Sample
from tests.annotate.results_scene import HTMX
from tests.conftest import login

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords")]

SELECTION = "/projects/demo/results/selection/"


def error_lines(html: str) -> list[str]:
    found = re.search(r'<p class="error card" role="alert" data-role="error">(.*?)</p>', html, re.S)
    assert found, "no error paragraph"
    return [line.strip().replace("&#x27;", "'") for line in found.group(1).split("<br>")]


def test_every_bad_parameter_is_named_on_its_own_line(scene: dict[str, Any]) -> None:
    for extra in ({}, HTMX):
        response = login(scene["admin"]).get("/projects/demo/results/?threshold=abc&k=-1", **extra)
        assert response.status_code == 400
        assert error_lines(response.content.decode()) == [
            "threshold: must be a number between 0 and 1, not 'abc'",
            "k: must be a whole number at least 1, not '-1'",
        ]


def test_a_missing_round_is_named_beside_the_other_problems(scene: dict[str, Any]) -> None:
    response = login(scene["admin"]).get("/projects/demo/results/?round=9&threshold=2&k=x")
    assert response.status_code == 400
    assert error_lines(response.content.decode()) == [
        "round: the project has no round 9 (rounds with assignments: 1)",
        "threshold: must be a number between 0 and 1, not '2'",
        "k: must be a whole number at least 1, not 'x'",
    ]


def test_one_bad_parameter_reads_as_before(scene: dict[str, Any]) -> None:
    response = login(scene["admin"]).get("/projects/demo/results/?k=0")
    assert error_lines(response.content.decode()) == ["k: must be a whole number at least 1, not '0'"]


def test_making_batches_names_every_bad_field_and_makes_nothing(scene: dict[str, Any]) -> None:
    batches, samples = Batch.objects.count(), Sample.objects.count()
    body = {"threshold": "abc", "k": "-1", "passages_per_batch": "0", "name_prefix": "hard"}
    page = login(scene["admin"]).post(SELECTION, body, follow=True).content.decode().replace("&#x27;", "'")
    assert ("No batch created. threshold: must be a number between 0 and 1, not 'abc'; "
            "k: must be a whole number at least 1, not '-1'; "
            "passages_per_batch: must be a whole number between 1 and 1000, not '0'") in page
    assert (Batch.objects.count(), Sample.objects.count()) == (batches, samples)


def test_the_messages_about_several_batches_say_batches(scene: dict[str, Any]) -> None:
    client = login(scene["admin"])
    body = {"k": "2", "threshold": "0.5", "name_prefix": "hard", "passages_per_batch": "1"}
    made = client.post(SELECTION, body, follow=True).content.decode()
    assert "Created 2 batches (hard-1 … hard-2) with 7 copied samples; assign annotators" in made
    again = client.post(SELECTION, body, follow=True).content.decode()
    assert "These batches already exist: 2 batches (hard-1 … hard-2) from this selection" in again


def test_the_messages_about_one_batch_say_batch(scene: dict[str, Any]) -> None:
    client = login(scene["admin"])
    body = {"k": "2", "threshold": "0.5", "name_prefix": "one", "passages_per_batch": "5"}
    made = client.post(SELECTION, body, follow=True).content.decode()
    assert "Created 1 batch (one-1) with 7 copied samples; assign annotators" in made
    assert "1 batches" not in made and "one-1 … one-1" not in made
    again = client.post(SELECTION, body, follow=True).content.decode()
    assert "This batch already exists: 1 batch (one-1) from this selection; nothing new was created." in again
