"""Every table header cell says what its column holds, for a screen reader at least: a column of buttons or links
("Gold label", "Download", Resolve) gets words only a screen reader reads (class visually-hidden), never an empty
<th>. On the demo-like world of tests/roles (the pages of tests/test_page_names.py, the home pages and both kinds of
project page)."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from tests.judging.audit_helpers import Element
from tests.roles.expectations import ANNOTATOR, SUPERUSER
from tests.roles.world import World
from tests.test_page_names import expected_trails, page_of, world

pytestmark = pytest.mark.django_db

__all__ = ["world"]  # a fixture, imported for this module's tests


def empty_headers(page: Element) -> list[str]:
    """The header cells with no words and no aria-label, each named by the headers beside it."""
    empty = []
    for row in page.find("tr"):
        cells = [cell for cell in row.children() if cell.tag == "th"]
        for at, cell in enumerate(cells):
            if not " ".join(cell.text.split()) and not cell.attrs.get("aria-label"):
                beside = [" ".join(other.text.split()) for other in cells]
                empty.append(f"header {at + 1} of {beside}")
    return empty


def test_no_table_header_cell_is_empty(world: World) -> None:
    admin, annotator = world.client(SUPERUSER), world.client(ANNOTATOR)
    pages: list[tuple[str, Any, str]] = [(name, client, url) for name, client, url, _ in expected_trails(world)]
    pages += [
        ("home (admin)", admin, reverse("home")),
        ("home (annotator)", annotator, reverse("home")),
        ("span project", admin, reverse("project", args=[world.projects["spans"].slug])),
        ("pairs project", admin, reverse("project", args=[world.projects["pairs"].slug])),
    ]
    found = {name: empty_headers(page_of(client, url)) for name, client, url in pages}
    assert {name: cells for name, cells in found.items() if cells} == {}
