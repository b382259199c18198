"""The agreement page shows DESIGN.md's five label schemes by default, as README says (it showed three)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from annotate import agreement
from tests.annotate.results_scene import tags
from tests.conftest import login

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords")]

# DESIGN.md, "Label schemes for agreement": every scheme of its table.
DESIGN_SCHEMES = {"C|U", "C|B|U", "C+B|Q|U", "C+B|Q+U", "C|B|Q|U"}
README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_page_shows_alpha_for_all_five_schemes_without_being_asked(scene: dict[str, Any]) -> None:
    page = tags(login(scene["admin"]).get("/projects/demo/agreement/"))
    shown = {cell["data-scheme"] for cell in page.find("td", data_round="1", data_level="nominal") if "data-scheme" in cell}
    assert shown == DESIGN_SCHEMES
    for scheme in DESIGN_SCHEMES:
        for level in agreement.LEVELS:
            page.one("td", data_scheme=scheme, data_level=level, data_round="1")
    # The form says what it shows: all five in its scheme field.
    field = page.one("input", name="scheme")
    assert {part.strip() for part in field["value"].split(",")} == DESIGN_SCHEMES


def test_the_readme_names_the_schemes_the_page_shows() -> None:
    text = README.read_text(encoding="utf-8")
    found = re.search(r"alpha for the label schemes (.*?)\. Groups", text, re.S)
    assert found, "README no longer says which schemes the agreement page shows"
    assert set(re.findall(r"`([^`]+)`", found.group(1))) == DESIGN_SCHEMES
