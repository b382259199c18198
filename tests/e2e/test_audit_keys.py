"""The audit page's keys wherever the focus is: Enter on a focused button, checkbox or summary does that control's
own action and saves nothing (no verdict can be taken back here), Ctrl+Enter saves from anywhere; the score keys,
a, w, n and ? work with the focus on the checkbox or a button (only text fields keep the keys); and after a
verdict the focus is on the next item's section, so Tab goes on from the item and not from the page's top."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from judging.models import Audit, AuditItem
from tests.e2e.audit_page_helpers import keys_ready
from tests.judging.audit_helpers import AuditScene, build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

VIEW = "#audit-view"
HELP = "#audit-help"
WRONG = '[data-role="reasoning-wrong"]'
# What has the focus, named by its data-role (or its tag when it has none).
FOCUSED = "() => { const el = document.activeElement; return el.dataset.role || el.tagName.toLowerCase(); }"
FOCUS_IN_ITEM = "() => Boolean(document.activeElement.closest('#audit-view [data-role=\"item\"]'))"


@pytest.fixture
def scene(project: Project, batch: Batch) -> AuditScene:
    return build_scene(project, batch)


def open_audit(page: Page, live_server: Any, log_in: Any, scene: AuditScene) -> None:
    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[scene.project.slug]))
    expect(page.locator("#auditor.ready")).to_be_attached()
    settled(page, scene.queue_order[0])


def settled(page: Page, item: AuditItem) -> None:
    """Wait until ``item`` is shown and htmx has wired its forms (a form posted before that leaves htmx out)."""
    view = page.locator(VIEW)
    expect(view).to_have_attribute("data-item-id", str(item.pk))
    expect(view).not_to_have_class(re.compile(r"htmx-(settling|swapping|request)"))
    keys_ready(page)


def answered(scene: AuditScene) -> int:
    return Audit.objects.filter(auditor=scene.auditor, answered_at__isnull=False).count()


def test_enter_on_a_focused_control_does_its_own_action_and_saves_nothing(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    first, second, _ = scene.queue_order
    open_audit(page, live_server, log_in, scene)
    page.keyboard.press("3")  # a score is chosen: the old page saved it on any Enter

    page.focus('[data-role="toggle-help"]')
    page.keyboard.press("Enter")  # the Keys button: shows the shortcuts
    expect(page.locator(HELP)).to_have_attribute("open", "")
    page.focus(f"{HELP} summary")
    page.keyboard.press("Enter")  # the list's own summary: hides it
    expect(page.locator(HELP)).not_to_have_attribute("open", "")

    page.focus(WRONG)
    page.keyboard.press("Enter")  # the checkbox: ticked, as Space does
    expect(page.locator(WRONG)).to_be_checked()
    page.keyboard.press("Enter")
    expect(page.locator(WRONG)).not_to_be_checked()
    page.keyboard.press("Enter")
    expect(page.locator(WRONG)).to_be_checked()

    page.focus('[data-role="blind-toggle"]')
    page.keyboard.press("Enter")  # the Blind mode button: switches blind mode, on the same output
    expect(page.locator(VIEW)).to_have_attribute("data-blind", "on")
    settled(page, first)
    expect(page.locator('[data-role="blind-toggle"]')).to_be_focused()  # the swap gives the focus back
    page.keyboard.press("Enter")
    expect(page.locator(VIEW)).to_have_attribute("data-blind", "off")
    settled(page, first)

    page.wait_for_timeout(300)  # a save the page wrongly started would be back by now
    assert answered(scene) == 0
    assert not Audit.objects.filter(auditor=scene.auditor, item=second).exists()

    # The choice made before the switches is still the item's (audit/choice.js keeps it through a swap).
    expect(page.locator('[data-role="audit-form"] [data-score="3"]')).to_have_attribute("aria-pressed", "true")
    expect(page.locator(WRONG)).to_be_checked()
    # Ctrl+Enter saves from anywhere, a focused button included.
    page.focus('[data-role="toggle-help"]')
    page.keyboard.press("Control+Enter")
    settled(page, second)
    saved = Audit.objects.get(auditor=scene.auditor, item=first)
    assert (saved.score, saved.reasoning_wrong) == (3, True)
    assert answered(scene) == 1


def test_keys_work_while_the_checkbox_or_a_button_has_the_focus(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    first, second, _ = scene.queue_order
    open_audit(page, live_server, log_in, scene)

    page.click(WRONG)  # ticked with the mouse: the checkbox keeps the focus
    expect(page.locator(WRONG)).to_be_focused()
    page.keyboard.press("4")
    expect(page.locator('[data-score="4"]')).to_have_attribute("aria-pressed", "true")
    page.keyboard.press("w")
    expect(page.locator(WRONG)).not_to_be_checked()
    page.keyboard.press("a")
    expect(page.locator('[data-role="agree"]')).to_have_attribute("aria-pressed", "true")
    page.keyboard.press("?")
    expect(page.locator(HELP)).to_have_attribute("open", "")
    page.keyboard.press("?")
    expect(page.locator(HELP)).not_to_have_attribute("open", "")

    page.click('[data-score="2"]')  # a score button keeps the focus: the other keys still work
    expect(page.locator('[data-score="2"]')).to_be_focused()
    page.keyboard.press("5")
    expect(page.locator('[data-score="5"]')).to_have_attribute("aria-pressed", "true")
    expect(page.locator('[data-score="2"]')).to_have_attribute("aria-pressed", "false")
    page.keyboard.press("w")
    expect(page.locator(WRONG)).to_be_checked()

    # The note is a text field: it keeps its keys, and Esc leaves it for the item, where the keys work again.
    page.keyboard.press("n")
    expect(page.locator('[data-role="note"]')).to_be_focused()
    page.keyboard.type("1 a")
    expect(page.locator('[data-score="5"]')).to_have_attribute("aria-pressed", "true")
    page.keyboard.press("Escape")
    assert page.evaluate(FOCUSED) == "item"

    page.keyboard.press("Enter")
    settled(page, second)
    saved = Audit.objects.get(auditor=scene.auditor, item=first)
    assert (saved.score, saved.reasoning_wrong, saved.note) == (5, True, "1 a")


def test_after_a_verdict_the_focus_is_on_the_next_item_so_tab_goes_on_from_it(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    first, second, third = scene.queue_order
    open_audit(page, live_server, log_in, scene)

    # Saved with the keys.
    page.keyboard.press("3")
    page.keyboard.press("Enter")
    settled(page, second)
    assert page.evaluate(FOCUSED) == "item"
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUS_IN_ITEM), f"Tab went to {page.evaluate(FOCUSED)}, outside the item"
    expect(page.locator('[data-role="source"]')).to_be_focused()  # the item's first stop: its source text

    # Saved with the mouse: the clicked Save button is gone with its item; the focus is not lost to the page.
    page.click('[data-score="2"]')
    page.click('[data-role="submit"]')
    settled(page, third)
    assert page.evaluate(FOCUSED) == "item"
    assert Audit.objects.get(auditor=scene.auditor, item=second).score == 2
    # Enter on the item is the save key again, never a click on a control of the output before.
    page.keyboard.press("Enter")
    expect(page.locator('[data-role="hint"]')).to_contain_text("Give a score (1-5)")
    assert answered(scene) == 2
