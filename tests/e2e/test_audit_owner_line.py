"""The line above the texts that names whose quotes they highlight (the judge) is read whole on a phone: at 390 px
it wraps, a long judge name included, and the page gets no sideways scroll, in a room that does not shrink when a
shorter name takes one line (the texts below stay put); on a 1366x768 screen it stays the one line beside the flag
line that it was."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from tests.judging.audit_helpers import build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# A judge named after its model, as admins do: one long word, longer than a phone's line leaves beside the label.
LONG_JUDGE = "llama-3.1-70b-instruct-rubric-explainer"

# The owner line's box against its content, the page's width against the window's, and how many lines its words
# take: a Range yields a rect per fragment of each line, and a fragment that starts below the bottom of the ones
# before it starts a new line (a smaller kbd on the same line overlaps them, so it does not).
OWNER_BOX = """() => {
  const owner = document.querySelector('[data-role="quotes-owner"]');
  const why = document.querySelector('#audit-view .audit-why');
  const range = document.createRange();
  range.selectNodeContents(owner);
  const rects = [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0).sort((a, b) => a.top - b.top);
  let lines = 0;
  let bottom = -Infinity;
  for (const rect of rects) {
    if (rect.top >= bottom - 1) { lines += 1; bottom = rect.bottom; } else bottom = Math.max(bottom, rect.bottom);
  }
  const box = owner.getBoundingClientRect();
  return {
    scrollWidth: owner.scrollWidth, clientWidth: owner.clientWidth,
    scrollHeight: owner.scrollHeight, clientHeight: owner.clientHeight,
    left: box.left, right: box.right, top: box.top, lines, whyTop: why.getBoundingClientRect().top,
    pageWidth: document.documentElement.scrollWidth, windowWidth: document.documentElement.clientWidth,
  };
}"""

# The source text's top on the page (not in the window, which may scroll).
SOURCE_TOP = "() => document.querySelector('[data-role=\"source\"]').getBoundingClientRect().top + scrollY"


def open_audit_page(page: Page, live_server: Any, log_in: Any, auditor: Any, slug: str) -> None:
    log_in(page, auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[slug]))
    expect(page.locator("#auditor.ready")).to_be_attached()
    expect(page.locator('[data-role="quotes-owner-name"]')).to_have_text(LONG_JUDGE)


def test_the_judge_owner_line_wraps_whole_on_a_phone_and_stays_one_line_on_a_laptop(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    scene.explainer.name = LONG_JUDGE
    scene.explainer.save(update_fields=["name"])

    page.set_viewport_size({"width": 390, "height": 844})
    open_audit_page(page, live_server, log_in, scene.auditor, project.slug)
    phone = page.evaluate(OWNER_BOX)
    assert phone["scrollWidth"] <= phone["clientWidth"], f"the owner line is cut short at 390 px: {phone}"
    assert phone["scrollHeight"] <= phone["clientHeight"], f"the owner line's wrapped lines are clipped: {phone}"
    assert phone["left"] >= 0 and phone["right"] <= phone["windowWidth"], f"the owner line runs off screen: {phone}"
    assert phone["pageWidth"] <= phone["windowWidth"], f"the page scrolls sideways at 390 px: {phone}"
    assert phone["lines"] >= 2, f"the long judge name fitted one line at 390 px: the test proves nothing: {phone}"
    # Whole, not shrunk to nothing: the judge's name is in view in its line.
    expect(page.locator('[data-role="quotes-owner-name"]')).to_be_in_viewport(ratio=1)
    # j: the next judge, a short name in one line: the line keeps its room, the texts below do not move up.
    source_top = page.evaluate(SOURCE_TOP)
    page.keyboard.press("j")
    expect(page.locator('[data-role="quotes-owner-name"]')).to_have_text(scene.first_pass.name)
    short = page.evaluate(OWNER_BOX)
    assert short["lines"] == 1, short
    assert page.evaluate(SOURCE_TOP) == source_top, "the source text moved when the owner line went from two lines to one"

    page.set_viewport_size({"width": 1366, "height": 768})
    page.reload()
    expect(page.locator("#auditor.ready")).to_be_attached()
    laptop = page.evaluate(OWNER_BOX)
    assert laptop["lines"] == 1, f"the owner line takes {laptop['lines']} lines at 1366 px: {laptop}"
    assert abs(laptop["top"] - laptop["whyTop"]) < 8, f"the owner line left the flag line's row at 1366 px: {laptop}"
    assert laptop["pageWidth"] <= laptop["windowWidth"], f"the page scrolls sideways at 1366 px: {laptop}"
