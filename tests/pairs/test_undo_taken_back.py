"""The undo's answer names what it took back: the item (it is the answer's body) and the label of the answer taken
back (``taken_back``), which may have been given in another tab. The labeling page words its "taken back"
notice from these, not from its own memory of its last answer (static/annotate/pairs/label.js)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.generators import SchemaGenerator

from annotate.models import Project
from annotate.services.pairs import queue
from tests.pairs.conftest import make_pair_items
from tests.pairs.test_pairs_api import client_of, next_item, post_label


def test_the_undo_names_the_answer_another_tab_gave_not_the_one_this_tab_gave(
    pairs_project: Project, alice: Any
) -> None:
    first, second, _ = make_pair_items(pairs_project, 3)
    this_tab, other_tab = client_of(alice), client_of(alice)
    assert next_item(this_tab).json()["id"] == first.pk
    assert post_label(this_tab, first.pk, "H").json()["next"]["id"] == second.pk
    # The other tab is served the same item and answers it: its answer is now the last one.
    assert next_item(other_tab).json()["id"] == second.pk
    assert post_label(other_tab, second.pk, "N").status_code == 201

    undone = this_tab.post("/api/pairs/undo/?project=pairs")

    assert undone.status_code == 200
    body = undone.json()
    assert (body["id"], body["perturbed_words"], body["taken_back"]) == (second.pk, "June", {"label": "N"})


def test_the_service_returns_the_label_it_took_back(pairs_project: Project, alice: Any) -> None:
    item = make_pair_items(pairs_project, 1)[0]
    queue.serve_next_item(pairs_project, alice)
    queue.record_judgement(pairs_project, alice, item.pk, "?")

    undone = queue.undo_last_judgement(pairs_project, alice)

    assert undone is not None and undone.item_id == item.pk
    assert (undone.label, undone.taken_back_label) == ("", "?")


def test_the_schema_describes_the_answer_taken_back() -> None:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]

    def component(ref: dict[str, Any]) -> dict[str, Any]:
        return components[(ref.get("allOf") or [ref])[0]["$ref"].rsplit("/", 1)[1]]

    undo = schema["paths"]["/api/pairs/undo/"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    undone = component(undo)
    assert "taken_back" in undone["required"]
    label = component(undone["properties"]["taken_back"])["properties"]["label"]
    assert component(label)["enum"] == ["H", "N", "?"]
