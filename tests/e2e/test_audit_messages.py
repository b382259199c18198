"""The audit page's messages (after b, after Enter with no score, the blind-mode hints) never cover a control: they
used to float at the window's bottom centre, over "Save and next" and the blind hint on a laptop screen. They lie
over the toolbar's words now; checked at 1366x768 and 390x844, at the page's top and scrolled down to the form."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from tests.e2e.audit_page_helpers import keys_ready
from tests.judging.audit_helpers import build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# The shown message's box, and the box of every control in view that it overlaps (with the blind hint's line).
OVERLAPS = """() => {
  const message = [...document.querySelectorAll('#audit-view .notice')].find((el) => !el.hidden && el.checkVisibility());
  if (!message) return {message: null, covered: []};
  const box = message.getBoundingClientRect();
  const controls = document.querySelectorAll(
    '#auditor button, #auditor input:not([type="hidden"]), #auditor textarea, #auditor a[href], #auditor summary,'
    + ' #auditor [data-role="save-status"], #auditor .verdict-save .muted');
  const covered = [];
  for (const control of controls) {
    const rect = control.getBoundingClientRect();
    if (!rect.width || !rect.height || !control.checkVisibility()) continue;
    if (rect.left < box.right && box.left < rect.right && rect.top < box.bottom && box.top < rect.bottom) {
      covered.push(`${control.dataset.role || control.dataset.score || control.tagName}`
        + ` [${[rect.left, rect.top, rect.right, rect.bottom].map(Math.round)}]`);
    }
  }
  return {message: [box.left, box.top, box.right, box.bottom].map(Math.round), text: message.textContent, covered};
}"""
SAVE_BOX = """() => {
  const rect = document.querySelector('[data-role="submit"]').getBoundingClientRect();
  return [rect.left, rect.top, rect.right, rect.bottom];
}"""


def covers_nothing(page: Page, when: str, size: str) -> dict[str, Any]:
    found = page.evaluate(OVERLAPS)
    assert found["message"], f"{size}, {when}: no message shown"
    assert found["covered"] == [], f"{size}, {when}: the message {found['message']} ({found['text']!r}) covers {found['covered']}"
    return found


def apart(message: list[float], control: list[float]) -> bool:
    left, top, right, bottom = message
    return not (control[0] < right and left < control[2] and control[1] < bottom and top < control[3])


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
def test_messages_never_cover_save_nor_any_other_control(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch, width: int, height: int
) -> None:
    scene = build_scene(project, batch)
    first, second, _ = scene.queue_order
    size = f"{width}x{height}"
    page.set_viewport_size({"width": width, "height": height})
    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[project.slug]))
    expect(page.locator("#auditor.ready")).to_be_attached()
    view = page.locator("#audit-view")
    expect(view).to_have_attribute("data-item-id", str(first.pk))
    hint = page.locator('[data-role="hint"]')

    # Enter with no score, at the page's top and scrolled down to Save.
    page.keyboard.press("Enter")
    expect(hint).to_contain_text("Give a score (1-5)")
    found = covers_nothing(page, "Enter with no score", size)
    assert apart(found["message"], page.evaluate(SAVE_BOX)), f"{size}: the message covers Save"
    page.locator('[data-role="submit"]').scroll_into_view_if_needed()
    page.keyboard.press("Enter")
    found = covers_nothing(page, "Enter with no score, scrolled to Save", size)
    assert apart(found["message"], page.evaluate(SAVE_BOX)), f"{size}: the message covers Save (scrolled)"

    # b: blind mode on, this item's judges shown already (the server's notice).
    page.evaluate("window.scrollTo(0, 0)")
    page.keyboard.press("b")
    expect(page.locator('[data-role="notice"]')).to_contain_text("Blind mode is on")
    found = covers_nothing(page, "after b", size)
    assert apart(found["message"], page.evaluate(SAVE_BOX)), f"{size}: the notice covers Save"

    # The next item, blind: Enter and a say to give a score first, beside the blind hint, which stays clear.
    page.keyboard.press("3")
    page.keyboard.press("Enter")
    expect(view).to_have_attribute("data-item-id", str(second.pk))
    expect(view).to_have_attribute("data-state", "blind")
    keys_ready(page)
    # Pressed once: the a that went unanswered now and then was a key pressed while the page reloaded after 3 Enter
    # had posted a form htmx had not wired yet (tests/e2e/test_audit_keys_never_lost.py).
    page.keyboard.press("a")
    expect(hint).to_contain_text("Give your own score first")
    covers_nothing(page, "a in blind mode", size)
    page.locator('.verdict-save .muted').scroll_into_view_if_needed()
    page.keyboard.press("Enter")
    expect(hint).to_contain_text("Give your own score first")
    covers_nothing(page, "Enter in blind mode, scrolled to the form", size)
