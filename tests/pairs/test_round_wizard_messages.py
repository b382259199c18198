"""The round wizard's messages: a bad field is named by its label beside the field, also after an htmx preview
(which swaps only the preview), the funnel's text names fields by their labels, and a project without items is
told so, with a link to the import, instead of "every item is already in a round".
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import pytest

from annotate.models import PairOriginal, PairRound, Project
from tests.conftest import login
from tests.pairs.conftest import make_pair_items
from tests.pairs.page_helpers import HTMX, OPEN, WIZARD, funnel

pytestmark = pytest.mark.django_db


class FieldMessages(HTMLParser):
    """Each field's message slot (``data-error``): its text, whether it is hidden, whether it swaps out of band."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.slots: dict[str, dict[str, Any]] = {}
        self.forms: list[dict[str, str]] = []
        self._open: str | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.forms.append(found)
        if "data-error" in found:
            self._open = found["data-error"]
            self.slots[self._open] = {"text": "", "hidden": "hidden" in found, "oob": found.get("hx-swap-oob") == "true",
                                      "id": found.get("id", "")}

    def handle_data(self, data: str) -> None:
        if self._open:
            self.slots[self._open]["text"] += data

    def handle_endtag(self, tag: str) -> None:
        if self._open and tag == "p":
            self.slots[self._open]["text"] = self.slots[self._open]["text"].strip()
            self._open = None


def test_a_typed_bad_size_answers_its_message_beside_the_field_and_clears_the_preview(
    pairs_project: Project, admin_user: Any
) -> None:
    make_pair_items(pairs_project, 12, round_number=None)
    html = login(admin_user).get(WIZARD, {**OPEN, "size": "-5"}, **HTMX).content.decode()
    slots = FieldMessages(html).slots
    # The form is not swapped by a preview: the message goes beside the field out of band, by the slot's id.
    assert slots["size"] == {"text": "-5 is below 1", "hidden": False, "oob": True, "id": "round-error-size"}
    # The other shown fields' slots come back empty, so a message fixed meanwhile goes away.
    assert slots["seed"] == {"text": "", "hidden": True, "oob": True, "id": "round-error-seed"}
    # The preview no longer shows the last funnel: it says why there is none, naming the field by its label.
    assert 'data-role="funnel"' not in html
    assert '<li data-field="size">Items to draw: -5 is below 1</li>' in html
    assert "size: -5" not in html


def test_the_page_has_a_slot_beside_each_field_and_lets_the_server_check_the_values(
    pairs_project: Project, admin_user: Any
) -> None:
    PairRound.objects.create(project=pairs_project, number=1, size=3, seed=1)
    html = login(admin_user).get(WIZARD, {**OPEN, "low": "2"}).content.decode()
    page = FieldMessages(html)
    form = next(form for form in page.forms if form.get("data-role") == "round-form")
    # Without novalidate the browser's min/max check stops htmx from asking for a preview at all.
    assert "novalidate" in form
    assert set(page.slots) == {"size", "low", "high", "paraphrase_max", "drop_fraction", "seed"}
    assert page.slots["low"]["text"] == "2 is not between 0 and 1" and not page.slots["low"]["oob"]
    assert all(slot["hidden"] for name, slot in page.slots.items() if name != "low")
    assert re.search(r'name="low"[^>]*aria-describedby="round-error-low"', html)


def test_the_funnel_names_the_swap_share_by_its_label(detector_project: Project, admin_user: Any) -> None:
    html = login(admin_user).get(WIZARD, {**OPEN, "drop_fraction": "1"}, **HTMX).content.decode()
    assert "date_name" in funnel(html)
    step = re.search(r'<tr data-step="date_name">(.*?)</tr>', html, re.S)
    assert step is not None
    assert "share of date/name swaps dropped: 1," in step.group(1) and "drop_fraction" not in step.group(1)


def test_a_project_without_items_says_so_and_links_to_the_import(pairs_project: Project, admin_user: Any) -> None:
    html = login(admin_user).get(WIZARD).content.decode()
    assert "this project has no items yet" in html and "already in a round" not in html
    assert 'href="/projects/pairs/#import" data-role="import-link"' in html
    assert 'data-role="perturb-link"' not in html


def test_imported_texts_not_perturbed_yet_are_pointed_at_the_perturbation(
    pairs_project: Project, admin_user: Any
) -> None:
    PairOriginal.objects.create(project=pairs_project, external_id="o1", text="The bridge opened in 1911.")
    html = login(admin_user).get(WIZARD).content.decode()
    assert "its 1 imported text is not perturbed yet" in html
    assert 'href="/projects/pairs/#perturbation" data-role="perturb-link"' in html
