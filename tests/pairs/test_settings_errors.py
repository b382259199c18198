"""The pairs settings form names every bad field at once, the judge counts' order among them."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import PairConfig, Project
from annotate.services.pairs.configure import PairSettingsInvalid, update_pair_settings
from tests.conftest import login

pytestmark = pytest.mark.django_db

SETTINGS_URL = "/projects/pairs/pairs/settings/"


def test_max_judges_below_judges_is_named_beside_the_other_bad_fields(pairs_project: Project) -> None:
    with pytest.raises(PairSettingsInvalid) as raised:
        update_pair_settings(pairs_project, {"judges_per_item": "6", "max_judges_per_item": "4", "top_k": "many",
                                             "mask_ratio": "0"})
    assert raised.value.problems == [
        "mask_ratio: 0 must be above 0.",  # in the form's order
        "top_k: 'many' is not a whole number.",
        "max_judges_per_item: 4 is below judges_per_item (6).",
    ]
    assert PairConfig.objects.get(project=pairs_project).judges_per_item == 4  # nothing saved


def test_the_comparison_uses_the_saved_value_of_the_field_not_sent(pairs_project: Project) -> None:
    # max_judges_per_item is 6 as saved; judges_per_item 8 is above it, and the bad temperature is named too.
    with pytest.raises(PairSettingsInvalid) as raised:
        update_pair_settings(pairs_project, {"judges_per_item": "8", "temperature": "-1"})
    assert raised.value.problems == [
        "temperature: -1 must be above 0.",
        "max_judges_per_item: 6 is below judges_per_item (8).",
    ]


def test_an_unreadable_judge_count_is_not_compared(pairs_project: Project) -> None:
    with pytest.raises(PairSettingsInvalid) as raised:
        update_pair_settings(pairs_project, {"judges_per_item": "four", "max_judges_per_item": "2"})
    assert raised.value.problems == ["judges_per_item: 'four' is not a whole number."]


def test_the_settings_form_shows_every_error_after_one_post(pairs_project: Project, admin_user: Any) -> None:
    html = login(admin_user).post(SETTINGS_URL, {"judges_per_item": "6", "max_judges_per_item": "4",
                                                 "top_k": "many"}, follow=True).content.decode()
    assert "Settings not saved." in html
    assert "top_k: &#x27;many&#x27; is not a whole number." in html
    assert "max_judges_per_item: 4 is below judges_per_item (6)." in html
    saved = PairConfig.objects.get(project=pairs_project)
    assert (saved.judges_per_item, saved.max_judges_per_item, saved.top_k) == (4, 6, 10)
