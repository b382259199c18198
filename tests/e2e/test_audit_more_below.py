"""A text longer than its box says there is more to read: at rest the box's bottom edge falls between two lines
(it used to cut one in half, the only sign of more), a "more below" cue shows while the text goes on below and
goes once it is scrolled to the end, where the last line sits whole above the box's bottom padding. A text that
fits shows no cue. At 1366x768 and 390x844."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from tests.e2e.audit_page_helpers import add_output_served_first, open_audit, shown
from tests.judging.audit_helpers import build_scene, flag

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

FILLER = "The harbour board met again that week to hear the pilots, the traders and the town clerk on the matter. "
LONG_SOURCE = FILLER * 12 + "In the end the pier was rebuilt in stone."
SHORT_OUTPUT = "The pier was rebuilt in timber."

# Where the box's edge falls, in lines, at rest; and where the last line sits after scrolling to the end.
LINES = """(role) => {
  const text = document.querySelector(`[data-role="${role}"]`);
  const style = getComputedStyle(text);
  const line = parseFloat(style.lineHeight);
  const top = parseFloat(style.paddingTop);
  return {lines: (text.clientHeight - top) / line, overflows: text.scrollHeight > text.clientHeight + 1};
}"""
AT_THE_END = """(role) => new Promise((done) => {
  const text = document.querySelector(`[data-role="${role}"]`);
  text.addEventListener("scroll", () => requestAnimationFrame(() => {
    const range = document.createRange();
    range.selectNodeContents(text);
    const rects = [...range.getClientRects()];
    const box = text.getBoundingClientRect();
    done({
      lastLineBottom: rects[rects.length - 1].bottom,
      innerBottom: box.bottom - parseFloat(getComputedStyle(text).borderBottomWidth),
      padding: parseFloat(getComputedStyle(text).paddingBottom),
    });
  }), {once: true});
  text.scrollTop = text.scrollHeight;
})"""


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
def test_a_long_text_shows_whole_lines_and_says_more_below_until_scrolled_to_its_end(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch, width: int, height: int
) -> None:
    scene = build_scene(project, batch)
    sample, flagged_by = add_output_served_first(project, batch, "long", LONG_SOURCE, SHORT_OUTPUT)
    item = flag(sample, flagged_by)
    size = f"{width}x{height}"
    page.set_viewport_size({"width": width, "height": height})
    log_in(page, scene.auditor)
    open_audit(page, live_server, project)
    shown(page, item)
    source_cue = page.locator('.pane:has([data-role="source"]) [data-role="more-below"]')
    output_cue = page.locator('.pane:has([data-role="summary"]) [data-role="more-below"]')

    rest = page.evaluate(LINES, "source")
    assert rest["overflows"], f"{size}: the long source fits its box; the test needs it longer"
    assert abs(rest["lines"] - round(rest["lines"])) < 0.05, f"{size}: the box's edge cuts a line: {rest['lines']:.2f} lines"
    expect(source_cue).to_be_visible()
    expect(source_cue).to_contain_text("more below")
    expect(output_cue).to_be_hidden()  # the output fits

    end = page.evaluate(AT_THE_END, "source")
    assert end["lastLineBottom"] <= end["innerBottom"] - end["padding"] + 1, f"{size}: the last line is cut at the end: {end}"
    expect(source_cue).to_be_hidden()
    page.locator('[data-role="source"]').evaluate("(text) => text.scrollTo({top: 0})")
    expect(source_cue).to_be_visible()
