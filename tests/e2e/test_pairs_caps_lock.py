"""The pair labeling page's letter keys with Caps Lock on: H, N, U and G do what h, n, u and g do, Shift+h with Caps
Lock (which arrives as "h" with Shift) too, and Ctrl+Z with Caps Lock still undoes. The page reads its keys through
the helper the span and audit pages share (static/js/keys.js)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import PairItem
from tests.e2e.test_pairs_labeling import judgement, open_labeling, pairs_project, shown_item, text_items

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

__all__ = ["pairs_project", "text_items"]  # fixtures, imported for this module's tests

# A key as Caps Lock sends it: keyboard.press("H") gives key "H" without Shift; Shift with Caps Lock on gives the
# lower case, which Playwright's keyboard cannot send, so that one is dispatched as the browser would.
CAPS_SHIFT_KEY = """(key) => document.activeElement.dispatchEvent(new KeyboardEvent("keydown", {
  key, code: "Key" + key.toUpperCase(), shiftKey: true, bubbles: true, cancelable: true, modifierCapsLock: true}))"""


def test_letter_keys_work_with_caps_lock_on(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, synonym = text_items
    log_in(page, alice)
    open_labeling(page, live_server, date.project)
    shown_item(page, date)
    guidelines = page.locator('[data-role="guidelines"]')
    was_open = guidelines.evaluate("e => e.open")

    page.keyboard.press("G")
    assert guidelines.evaluate("e => e.open") != was_open
    page.keyboard.press("G")
    assert guidelines.evaluate("e => e.open") == was_open

    page.keyboard.press("H")
    shown_item(page, name)
    assert judgement(date, alice).label == "H"

    page.evaluate(CAPS_SHIFT_KEY, "n")  # Shift+n with Caps Lock on: n, no other meaning here
    shown_item(page, synonym)
    assert judgement(name, alice).label == "N"

    page.keyboard.press("U")
    shown_item(page, name)
    expect(page.locator('[data-role="notice"]')).to_contain_text("taken back")
    assert judgement(name, alice).label == ""

    page.keyboard.press("N")
    shown_item(page, synonym)
    assert judgement(name, alice).label == "N"
    page.keyboard.press("Control+Z")  # Ctrl with Caps Lock's Z
    shown_item(page, name)
    assert judgement(name, alice).label == ""
