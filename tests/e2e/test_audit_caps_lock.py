"""The audit page's letter keys with Caps Lock on: A, W, J, K, N, B and U do what a, w, j, k, n, b and u do, and
Shift+w with Caps Lock (which arrives as "w" with Shift) too. The page reads its keys through the helper the span and
pair labeling pages share (static/js/keys.js)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from judging.models import Audit
from tests.e2e.audit_page_helpers import keys_ready
from tests.judging.audit_helpers import AuditScene, build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

VIEW = "#audit-view"
WRONG = '[data-role="reasoning-wrong"]'
LIT = '[data-role="judge"].quotes-lit'
# A key as Caps Lock sends it: keyboard.press("W") gives key "W" without Shift; Shift with Caps Lock on gives the
# lower case, which Playwright's keyboard cannot send, so that one is dispatched as the browser would.
CAPS_SHIFT_KEY = """(key) => document.activeElement.dispatchEvent(new KeyboardEvent("keydown", {
  key, code: "Key" + key.toUpperCase(), shiftKey: true, bubbles: true, cancelable: true, modifierCapsLock: true}))"""


@pytest.fixture
def scene(project: Project, batch: Batch) -> AuditScene:
    return build_scene(project, batch)


def settled(page: Page, item_id: int) -> None:
    view = page.locator(VIEW)
    expect(view).to_have_attribute("data-item-id", str(item_id))
    expect(view).not_to_have_class(re.compile(r"htmx-(settling|swapping|request)"))
    keys_ready(page)


def test_letter_keys_work_with_caps_lock_on(page: Page, live_server: Any, log_in: Any, scene: AuditScene) -> None:
    first, second, _ = scene.queue_order
    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[scene.project.slug]))
    expect(page.locator("#auditor.ready")).to_be_attached()
    settled(page, first.pk)

    page.keyboard.press("B")  # blind mode on, the same output shown again
    expect(page.locator(VIEW)).to_have_attribute("data-blind", "on")
    settled(page, first.pk)
    page.keyboard.press("B")
    expect(page.locator(VIEW)).to_have_attribute("data-blind", "off")
    settled(page, first.pk)

    page.keyboard.press("A")  # agree: the shown judge's score
    expect(page.locator('[data-role="agree"]')).to_have_attribute("aria-pressed", "true")
    expect(page.locator('[data-role="score-input"]')).to_have_value("3")
    page.keyboard.press("W")
    expect(page.locator(WRONG)).to_be_checked()
    page.evaluate(CAPS_SHIFT_KEY, "w")  # Shift+w with Caps Lock on: w, no other meaning here
    expect(page.locator(WRONG)).not_to_be_checked()
    page.keyboard.press("W")
    expect(page.locator(WRONG)).to_be_checked()

    lit = page.locator(LIT).get_attribute("data-judge")
    page.keyboard.press("J")
    expect(page.locator(LIT)).not_to_have_attribute("data-judge", lit or "")
    page.keyboard.press("K")
    expect(page.locator(LIT)).to_have_attribute("data-judge", lit or "")

    page.keyboard.press("N")
    expect(page.locator('[data-role="note"]')).to_be_focused()
    page.keyboard.type("caps")  # typed in the note: letters, not keys
    page.keyboard.press("Escape")
    page.keyboard.press("Enter")
    settled(page, second.pk)
    saved = Audit.objects.get(auditor=scene.auditor, item=first)
    assert (saved.score, saved.agreed, saved.reasoning_wrong, saved.note) == (3, True, True, "caps")

    page.keyboard.press("U")  # the saved verdict comes back to be changed
    expect(page.locator(VIEW)).to_have_attribute("data-state", "change")
    settled(page, first.pk)
