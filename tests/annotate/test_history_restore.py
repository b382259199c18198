"""Back and Forward on the pages whose filter form pushes its query into the URL (sample browser, results,
agreement, disputes).

Two contracts with the browser side (static/js/history-forms.js, templates/base.html):

- Every page carries one htmx-config meta (htmx reads only the first) with historyRestoreAsHxRequest false, so a
  Back that misses htmx's history cache asks for the URL without HX-Request and gets the whole page, not a
  fragment; the pages with their own response handling keep it.
- Each pushing filter form is marked data-sync-query, and a field's data-default (or "" without one) is the value
  the server renders when the URL leaves that parameter out: after a Back the script sets the fields from the URL,
  taking data-default for a missing parameter, so a wrong default would show a filter the table does not apply.

The browser walk is in tests/e2e/test_history_forms.py.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest

from tests.conftest import login

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords")]

HTMX_CONFIG = re.compile(r"""<meta name="htmx-config" content='([^']*)'>""")
PAGES_WITH_RESPONSE_HANDLING = ("samples", "labels")


def pages(scene: dict[str, Any]) -> dict[str, str]:
    """The URL of each page to check, with no filter in its query."""
    return {
        "home": "/",
        "project": "/projects/demo/",
        "labels": "/projects/demo/labels/",
        "samples": f"/projects/demo/batches/{scene['batch1'].pk}/samples/",
        "results": "/projects/demo/results/",
        "agreement": "/projects/demo/agreement/",
        "disputes": f"/projects/demo/disputes/?batch={scene['batch1'].pk}",
    }


class SyncedForms(HTMLParser):
    """The fields of a page's data-sync-query forms: (name, rendered value, data-default or None) for each field a
    GET form sends as a plain value (checkboxes left out: an unchecked box sends nothing)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.forms = 0
        self.pushing_forms_unmarked = 0
        self.fields: list[tuple[str, str, str | None]] = []
        self._in_form = False
        self._select: dict[str, Any] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "form":
            self._in_form = "data-sync-query" in found
            self.forms += self._in_form
            self.pushing_forms_unmarked += "hx-push-url" in found and not self._in_form
        elif not self._in_form:
            return
        elif tag == "input" and found.get("type") not in ("checkbox", "hidden", "submit") and "name" in found:
            self.fields.append((found["name"], found.get("value", ""), found.get("data-default")))
        elif tag == "select":
            self._select = {"name": found["name"], "default": found.get("data-default"), "first": None,
                            "selected": None}
        elif tag == "option" and self._select is not None:
            value = found.get("value", "")
            self._select["first"] = value if self._select["first"] is None else self._select["first"]
            if "selected" in found:
                self._select["selected"] = value

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._in_form = False
        elif tag == "select" and self._select is not None:
            select, self._select = self._select, None
            shown = select["selected"] if select["selected"] is not None else select["first"]
            self.fields.append((select["name"], shown or "", select["default"]))


@pytest.mark.parametrize("name", ["home", "project", "labels", "samples", "results", "agreement", "disputes"])
def test_every_page_has_one_htmx_config_that_restores_history_without_hx_request(
    scene: dict[str, Any], name: str
) -> None:
    response = login(scene["admin"]).get(pages(scene)[name])
    assert response.status_code == 200, response.content.decode()[:300]
    metas = HTMX_CONFIG.findall(response.content.decode())
    assert len(metas) == 1, f"{name}: htmx reads only the first htmx-config meta, the page has {len(metas)}"
    config = json.loads(metas[0])
    assert config["historyRestoreAsHxRequest"] is False
    if name in PAGES_WITH_RESPONSE_HANDLING:  # a 400 swaps its message in; other errors swap nothing
        assert {"code": "400", "swap": True, "error": True} in config["responseHandling"]
        assert config["responseHandling"][-1] == {"code": "...", "swap": False, "error": True}
    else:
        assert "responseHandling" not in config


def test_a_history_restore_request_without_hx_request_gets_the_whole_page(scene: dict[str, Any]) -> None:
    # What htmx sends on a cache miss once historyRestoreAsHxRequest is false.
    url = pages(scene)["samples"] + "?worst=U&page=1"
    html = login(scene["admin"]).get(url, HTTP_HX_HISTORY_RESTORE_REQUEST="true").content.decode()
    assert html.lstrip().lower().startswith("<!doctype html>")
    assert 'id="sample-filters"' in html and '<section id="samples">' in html


@pytest.mark.parametrize("name", ["samples", "results", "agreement", "disputes"])
def test_a_fields_default_is_what_the_page_shows_when_the_url_leaves_it_out(
    scene: dict[str, Any], name: str
) -> None:
    forms = SyncedForms(login(scene["admin"]).get(pages(scene)[name]).content.decode())
    assert forms.forms == 1 and forms.pushing_forms_unmarked == 0
    assert forms.fields, f"{name}: no field found in the filter form"
    for field, shown, default in forms.fields:
        assert shown == (default or ""), f"{name}: {field} shows {shown!r} by default, data-default says {default!r}"

