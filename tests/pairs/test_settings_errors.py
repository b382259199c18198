"""The pairs settings form names every bad field at once, the judge counts' order among them; the page shows each
refusal beside its field, by its label, and keeps what was typed."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest

from annotate.models import PairConfig, Project
from annotate.services.pairs.configure import PairSettingsInvalid, update_pair_settings
from tests.annotate.results_scene import Tags
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


def _setting(html: str, field: str) -> tuple[str, dict[str, str]]:
    """A settings input's label as read (tags dropped, spaces squeezed) and the input's attributes."""
    label = re.search(rf'<label[^>]*data-setting="{field}"[^>]*>(.*?)</label>', html, re.S)
    assert label is not None, f"no input for {field}"
    inner = label.group(1)
    found = Tags(inner).find("input", name=field)
    assert len(found) == 1, f"expected one input named {field}"
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", inner)).split()), found[0]


def test_a_refused_save_shows_each_error_beside_its_field_by_label_and_keeps_what_was_typed(
    pairs_project: Project, admin_user: Any
) -> None:
    typed = {"judges_per_item": "0", "max_judges_per_item": "6", "mask_ratio": "1.7", "top_k": "7",
             "masked_lm": "/models/typed-mlm", "temperature": "2.5"}
    response = login(admin_user).post(SETTINGS_URL, typed)
    assert response.status_code == 400  # the page again, not a redirect that would drop what was typed
    html = response.content.decode()
    judges_text, judges = _setting(html, "judges_per_item")
    assert "Judges per item: 0 must be at least 1." in judges_text
    assert judges["aria-invalid"] == "true" and judges["aria-describedby"] == "judges_per_item-error"
    mask_text, mask = _setting(html, "mask_ratio")
    assert "Mask ratio: 1.7 must be at most 1." in mask_text
    # Every field keeps what was typed, the valid ones too; none shows the saved value.
    assert {field: _setting(html, field)[1]["value"] for field in typed} == typed
    # The fields without a problem carry none; no message names a field by its key.
    top_k_text, top_k = _setting(html, "top_k")
    assert "aria-invalid" not in top_k and top_k_text == "Top-k"
    assert "judges_per_item:" not in html and "mask_ratio:" not in html
    summary = Tags(html).one("p", data_role="settings-refused")
    assert summary["role"] == "alert"
    assert "Settings not saved: 2 fields below need a change." in html
    saved = PairConfig.objects.get(project=pairs_project)
    assert (saved.judges_per_item, saved.mask_ratio, saved.top_k, saved.masked_lm, saved.temperature) == (
        4, 0.6, 10, "", 1.0)  # nothing saved, not even the valid fields


def test_the_judge_counts_refusal_names_both_fields_by_label(pairs_project: Project, admin_user: Any) -> None:
    html = login(admin_user).post(SETTINGS_URL, {"judges_per_item": "6", "max_judges_per_item": "4",
                                                 "top_k": "many"}).content.decode()
    assert "At most, after splits: 4 is below Judges per item (6)." in _setting(html, "max_judges_per_item")[0]
    assert "Top-k: 'many' is not a whole number." in _setting(html, "top_k")[0]
    assert "Settings not saved: 2 fields below need a change." in html
    saved = PairConfig.objects.get(project=pairs_project)
    assert (saved.judges_per_item, saved.max_judges_per_item, saved.top_k) == (4, 6, 10)


def test_the_page_shows_the_saved_values_and_no_error_before_any_save(pairs_project: Project, admin_user: Any) -> None:
    html = login(admin_user).get("/projects/pairs/").content.decode()
    assert _setting(html, "judges_per_item") == ("Judges per item", {
        "name": "judges_per_item", "type": "number", "min": "1", "max": "50", "step": "1", "value": "4"})
    assert _setting(html, "encoder")[1]["placeholder"] == "blank: PAIRS_ENCODER setting"
    assert 'data-role="settings-refused"' not in html


def test_a_valid_save_redirects_back_to_the_settings(pairs_project: Project, admin_user: Any) -> None:
    response = login(admin_user).post(SETTINGS_URL, {"judges_per_item": "3", "mask_ratio": "0.5"})
    assert response.status_code == 302 and response["Location"] == "/projects/pairs/#pair-settings"
    saved = PairConfig.objects.get(project=pairs_project)
    assert (saved.judges_per_item, saved.mask_ratio) == (3, 0.5)
