"""The pair page's guidelines sit under the item, below the fold of a 1280x720 laptop screen. A new judge's page
starts with them open and in view; g (and the toolbar's button) shows them in view too, and g again hides them and
brings the page back to the item. They used to open out of sight: g seemed to do nothing."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import PairItem
from tests.e2e.test_pairs_labeling import open_labeling, pairs_project, shown_item, text_items

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

__all__ = ["pairs_project", "text_items"]  # fixtures, imported for this module's tests

GUIDELINES = '[data-role="guidelines"]'
# The guidelines' heading line (their summary) and the window, in window pixels.
WHERE = """() => {
  const summary = document.querySelector('[data-role="guidelines"] > summary').getBoundingClientRect();
  return {top: summary.top, bottom: summary.bottom, height: innerHeight, scrollY: scrollY};
}"""


def in_view(where: dict[str, float]) -> bool:
    return 0 <= where["top"] and where["bottom"] <= where["height"]


def test_the_guidelines_open_in_view_and_closing_them_brings_the_item_back(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    log_in(page, alice)
    open_labeling(page, live_server, text_items[0].project)
    shown_item(page, text_items[0])
    guidelines = page.locator(GUIDELINES)

    # A judge who has answered nothing here yet: open, and where they can be read.
    expect(guidelines).to_have_attribute("open", "")
    assert in_view(page.evaluate(WHERE)), page.evaluate(WHERE)

    page.keyboard.press("g")
    expect(guidelines).not_to_have_attribute("open", "")
    assert page.evaluate(WHERE)["scrollY"] == 0  # back to the item
    expect(page.locator('[data-label="H"]')).to_be_in_viewport()

    page.keyboard.press("g")
    expect(guidelines).to_have_attribute("open", "")
    assert in_view(page.evaluate(WHERE)), page.evaluate(WHERE)


def test_an_answer_given_with_the_guidelines_in_view_shows_the_next_item_in_view(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    first, second, _ = text_items
    page.set_viewport_size({"width": 1280, "height": 720})
    log_in(page, alice)
    open_labeling(page, live_server, first.project)
    shown_item(page, first)
    assert in_view(page.evaluate(WHERE))  # a new judge: the guidelines open, in view

    page.keyboard.press("n")

    shown_item(page, second, answerable=False)
    assert page.evaluate(WHERE)["scrollY"] == 0
    expect(page.locator('[data-label="H"]')).to_be_in_viewport()
    expect(page.locator(GUIDELINES)).to_have_attribute("open", "")  # still open, below
