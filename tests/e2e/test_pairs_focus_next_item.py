"""The pair labeling page keeps the focus in the item after an answer, by key or by click: on the next item's
section (or on the text box that had it), never on the page's body, so Tab goes on from the item and not from the
top of the page; at the end, on the end's notice."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import PairItem
from tests.e2e.test_pairs_labeling import judgement, open_labeling, pairs_project, shown_item, text_items

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

__all__ = ["pairs_project", "text_items"]  # fixtures, imported for this module's tests

# What has the focus, named by its data-role (or its tag when it has none).
FOCUSED = "() => { const el = document.activeElement; return el.dataset.role || el.tagName.toLowerCase(); }"


def test_after_an_answer_by_key_or_click_the_focus_is_on_the_next_item(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, swap = text_items
    log_in(page, alice)
    open_labeling(page, live_server, date.project)
    shown_item(page, date)

    page.keyboard.press("h")
    shown_item(page, name)
    assert page.evaluate(FOCUSED) == "item"
    page.keyboard.press("Tab")  # on from the item: its first text, not the header's first link
    expect(page.locator('[data-role="original"]')).to_be_focused()

    page.click('[data-label="N"]')
    shown_item(page, swap)
    assert page.evaluate(FOCUSED) == "item"
    assert judgement(name, alice).label == "N"

    page.click('[data-label="?"]')  # the last one: the focus goes to what replaces the item
    expect(page.locator('[data-role="no-more-items"]')).to_be_visible()
    assert page.evaluate(FOCUSED) == "no-more-items"
    assert judgement(swap, alice).label == "?"


def test_a_text_box_with_the_focus_keeps_it_for_the_next_item(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, _ = text_items
    log_in(page, alice)
    open_labeling(page, live_server, date.project)
    shown_item(page, date)

    page.focus('[data-role="perturbed"]')  # as after a click in the text, or Tab, to scroll it with the arrows
    page.keyboard.press("n")
    shown_item(page, name)
    expect(page.locator('[data-role="perturbed"]')).to_be_focused()
    assert judgement(date, alice).label == "N"
