"""An item has one name everywhere: the export's item_id (its imported item_id, or item-<id> for an item made here),
shown by the round wizard's preview and the round page, and given by the API's item list as item_id beside the
fields it always had."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from annotate.models import PairItem, Project
from annotate.services.pairs.export import export_lines
from tests.conftest import login
from tests.pairs.conftest import make_pair_items
from tests.pairs.page_helpers import WIZARD

pytestmark = pytest.mark.django_db


def items_imported_and_made_here(project: Project, *, round_number: int | None) -> tuple[PairItem, PairItem]:
    """Two items: one imported with its item_id ("i0"...), one made here (perturbed in FaithLab: no item_id)."""
    imported, made_here = make_pair_items(project, 2, round_number=round_number)
    PairItem.objects.filter(pk=made_here.pk).update(external_id="")
    made_here.refresh_from_db()
    return imported, made_here


def shown_names(html: str) -> dict[int, str]:
    """Each item row's first cell, by the row's item pk."""
    return {int(pk): name.strip() for pk, name in re.findall(r'<tr data-item="(\d+)"[^>]*>\s*<td>([^<]*)</td>', html)}


def exported_names(project: Project) -> dict[str, str]:
    """The pair export's item_id of each item, by its perturbed words (unique here)."""
    rows = [json.loads(line) for line in export_lines(project, "pairs")]
    return {row["perturbed_words"]: row["item_id"] for row in rows}


def test_the_round_page_the_export_and_the_api_name_an_item_alike(pairs_project: Project, admin_user: Any) -> None:
    imported, made_here = items_imported_and_made_here(pairs_project, round_number=1)
    client = login(admin_user)
    page = shown_names(client.get("/projects/pairs/pairs/rounds/1/").content.decode())
    assert page == {imported.pk: imported.external_id, made_here.pk: f"item-{made_here.pk}"}

    exported = exported_names(pairs_project)
    assert exported == {imported.perturbed_words: page[imported.pk], made_here.perturbed_words: page[made_here.pk]}

    rows = {row["id"]: row for row in client.get("/api/pairs/", {"project": "pairs"}).json()["results"]}
    # item_id is new; id and external_id keep their meaning.
    assert {pk: row["item_id"] for pk, row in rows.items()} == page
    assert rows[made_here.pk]["external_id"] == "" and rows[imported.pk]["external_id"] == imported.external_id
    assert made_here.exported_id == f"item-{made_here.pk}" and imported.exported_id == imported.external_id


def test_an_annotator_s_item_list_names_their_items_as_the_export_does(pairs_project: Project, alice: Any) -> None:
    from tests.pairs.page_helpers import answer

    _, made_here = items_imported_and_made_here(pairs_project, round_number=1)
    answer(made_here, alice, "H")
    (row,) = login(alice).get("/api/pairs/", {"project": "pairs"}).json()["results"]
    assert (row["id"], row["external_id"], row["item_id"]) == (made_here.pk, "", f"item-{made_here.pk}")


def test_the_wizard_preview_names_items_as_the_export_does(pairs_project: Project, admin_user: Any) -> None:
    imported, made_here = items_imported_and_made_here(pairs_project, round_number=None)
    html = login(admin_user).get(WIZARD, {"size": "2", "seed": "3"}).content.decode()
    assert shown_names(html) == {imported.pk: imported.external_id, made_here.pk: f"item-{made_here.pk}"}
