"""The audit page's "Saved: score ..." line (data-role="last-saved") appears after the first verdict without moving
the form: its room in the toolbar is kept from the start, so the toolbar keeps its height and the verdict form its
place, on a phone (390x844, where the toolbar wraps) as on a laptop (1366x768)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from judging.models import AuditItem
from tests.e2e.audit_page_helpers import keys_ready
from tests.judging.audit_helpers import build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# Where the form and the toolbar are on the page (not in the window: the page may be scrolled), and the saved line.
PLACES = """() => {
  const box = (selector) => document.querySelector(selector).getBoundingClientRect();
  const saved = document.querySelector('[data-role="last-saved"]');
  return {
    formTop: Math.round((box('[data-role="audit-form"]').top + scrollY) * 10) / 10,
    toolbarHeight: Math.round(box('#audit-view .toolbar').height * 10) / 10,
    saved: saved ? saved.textContent.trim() : null,
    savedShown: saved ? saved.getBoundingClientRect().width > 0 && saved.checkVisibility() : false,
  };
}"""


def settled(page: Page, item: AuditItem) -> dict[str, Any]:
    """Wait for ``item`` to be shown and htmx to be done with it; then where things are."""
    view = page.locator("#audit-view")
    expect(view).to_have_attribute("data-item-id", str(item.pk))
    expect(view).not_to_have_class(re.compile(r"htmx-(settling|swapping|request)"))
    keys_ready(page)
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    return page.evaluate(PLACES)


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1366, 768)])
def test_the_saved_line_appears_without_moving_the_form(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch, width: int, height: int
) -> None:
    scene = build_scene(project, batch)
    first, second, third = scene.queue_order
    page.set_viewport_size({"width": width, "height": height})
    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[project.slug]))
    expect(page.locator("#auditor.ready")).to_be_attached()

    before = settled(page, first)
    assert not before["savedShown"], f"a saved line before any verdict: {before}"
    page.keyboard.press("3")
    page.keyboard.press("Enter")
    after_first = settled(page, second)
    assert after_first["savedShown"] and after_first["saved"].startswith("Saved: score 3"), after_first
    # The second verdict takes the judge's score: the longer line, "(agreed)" in it.
    page.keyboard.press("a")
    expect(page.locator('[data-role="agree"]')).to_have_attribute("aria-pressed", "true")
    page.keyboard.press("Enter")
    after_agreeing = settled(page, third)
    assert after_agreeing["savedShown"] and "(agreed)" in after_agreeing["saved"], after_agreeing

    for name, after in (("the first save", after_first), ("agreeing", after_agreeing)):
        assert after["toolbarHeight"] == before["toolbarHeight"], f"{width}x{height}: the toolbar changed height after {name}: " \
            f"{before['toolbarHeight']} -> {after['toolbarHeight']} px"
        assert after["formTop"] == before["formTop"], f"{width}x{height}: the form moved after {name}: " \
            f"top {before['formTop']} -> {after['formTop']} px"
