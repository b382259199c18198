"""The round wizard names an empty numeric field and what it takes, instead of "'' is not a number"."""

from __future__ import annotations

import html as html_lib
from typing import Any

import pytest

from annotate.models import PairRound, Project
from tests.conftest import login
from tests.pairs.page_helpers import HTMX, OPEN, WIZARD
from tests.pairs.test_round_wizard_messages import FieldMessages

pytestmark = pytest.mark.django_db


@pytest.fixture
def second_round_wizard(pairs_project: Project) -> Project:
    """Round 1 exists, so the wizard shows the filter fields too."""
    PairRound.objects.create(project=pairs_project, number=1, size=3, seed=1)
    return pairs_project


@pytest.mark.parametrize(("name", "message"), [
    ("size", "Items to draw is empty: enter a whole number, 1 or more"),
    ("low", "Lowest P(H) kept is empty: enter a number between 0 and 1"),
    ("high", "Highest P(H) kept is empty: enter a number between 0 and 1"),
    ("paraphrase_max", "Paraphrase threshold is empty: enter a number between -1 and 1"),
    ("drop_fraction", "Share of date/name swaps dropped is empty: enter a number between 0 and 1"),
])
def test_an_empty_field_is_named_with_the_numbers_it_takes(
    second_round_wizard: Project, admin_user: Any, name: str, message: str
) -> None:
    page = login(admin_user).get(WIZARD, {**OPEN, name: ""}, **HTMX).content.decode()
    slots = FieldMessages(page).slots
    assert slots[name]["text"] == message and not slots[name]["hidden"]
    # The list under the form names the field once.
    assert f'<li data-field="{name}">{html_lib.escape(message)}</li>' in page
    assert "&#x27;&#x27;" not in page and "''" not in page


def test_a_blank_field_reads_as_empty_and_the_seed_may_stay_blank(second_round_wizard: Project, admin_user: Any
                                                                   ) -> None:
    client = login(admin_user)
    page = client.get(WIZARD, {**OPEN, "low": "   ", "seed": ""}, **HTMX).content.decode()
    slots = FieldMessages(page).slots
    assert slots["low"]["text"] == "Lowest P(H) kept is empty: enter a number between 0 and 1"
    assert slots["seed"]["text"] == "" and slots["seed"]["hidden"]


def test_creating_a_round_with_an_empty_field_is_refused_with_the_same_words(
    second_round_wizard: Project, admin_user: Any
) -> None:
    response = login(admin_user).post(WIZARD, {**OPEN, "size": ""})
    assert response.status_code == 400
    assert "Items to draw is empty: enter a whole number, 1 or more" in response.content.decode()
    assert PairRound.objects.filter(project=second_round_wizard).count() == 1
