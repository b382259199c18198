"""The span page's keyboard selection never leaves the text it started in. Shift+Down on a text's last line used to
run out of the summary into the hint under it (Chromium's line step goes on to the next block), the caret then lost:
Alt+Shift+Up jumped to the text's start instead of the previous sentence's. Shift+Down (or Shift+Right) at the end
stops at the text's end, Shift+Up (or Shift+Left) at the start at its start, and the caret keys go on from there."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page

from annotate.models import Sample
from tests.e2e.annotation_helpers import open_sample
from tests.e2e.test_span_keyboard import split_source

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# Where the selection lies in the text ``role``, in UTF-16 units: [anchor, focus], null for an end outside the text.
ENDS = """(role) => {
  const el = document.querySelector(`[data-role="${role}"]`);
  const selection = window.getSelection();
  const at = (node, offset) => {
    if (!el.contains(node)) return null;
    const range = document.createRange();
    range.setStart(el, 0);
    range.setEnd(node, offset);
    return range.toString().length;
  };
  if (!selection.rangeCount) return [null, null];
  return [at(selection.anchorNode, selection.anchorOffset), at(selection.focusNode, selection.focusOffset)];
}"""


def ends(page: Page, role: str) -> list[int | None]:
    return page.evaluate(ENDS, role)


def test_shift_down_on_the_summary_s_last_line_stops_at_its_end_and_the_sentence_keys_go_on_from_there(
    page: Page, live_server: Any, log_in: Any, bob: Any, sample: Sample
) -> None:
    summary = sample.summary
    second = summary.index("The 12.4")
    log_in(page, bob)
    open_sample(page, live_server, sample)
    page.click('[data-role="summary"]')
    page.keyboard.press("Control+ArrowDown")
    page.keyboard.press("Control+ArrowDown")
    assert ends(page, "summary") == [len(summary), len(summary)]

    page.keyboard.press("Shift+ArrowDown")
    assert ends(page, "summary") == [len(summary), len(summary)]
    page.keyboard.press("Shift+ArrowRight")
    assert ends(page, "summary") == [len(summary), len(summary)]
    page.keyboard.press("Alt+Shift+ArrowUp")
    assert ends(page, "summary") == [second, second]

    # From the last sentence's start, Shift+Down extends line by line to the text's end and stops there.
    for _ in range(4):
        page.keyboard.press("Shift+ArrowDown")
        anchor, focus = ends(page, "summary")
        assert anchor == second and focus is not None
    assert ends(page, "summary") == [second, len(summary)]
    assert page.evaluate("window.getSelection().toString()") == summary[second:]

    # At the start, Shift+Up (and Shift+Left) stop at the text's start; the sentence keys go on from there.
    page.keyboard.press("Control+ArrowUp")
    page.keyboard.press("Control+ArrowUp")
    assert ends(page, "summary") == [0, 0]
    page.keyboard.press("Shift+ArrowUp")
    assert ends(page, "summary") == [0, 0]
    page.keyboard.press("Shift+ArrowLeft")
    assert ends(page, "summary") == [0, 0]
    page.keyboard.press("Alt+Shift+ArrowDown")
    assert ends(page, "summary") == [second, second]
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Shift+ArrowUp")  # from the first line's second sentence: up to the start, no further
    page.keyboard.press("Shift+ArrowUp")
    assert ends(page, "summary") == [second, 0]


def test_the_source_keeps_its_selection_too(
    page: Page, live_server: Any, log_in: Any, bob: Any, sample: Sample
) -> None:
    sentences = split_source(sample)
    text = sample.passage.text
    log_in(page, bob)
    open_sample(page, live_server, sample)
    page.focus('[data-role="source"]')
    for _ in range(len(sentences) + 1):
        page.keyboard.press("Control+ArrowDown")
    # The source's rendered text may hold more than the passage (white space between its sentences): its own length.
    length = page.evaluate("""() => document.querySelector('[data-role="source"]').textContent.length""")
    assert length >= len(text.rstrip())
    assert ends(page, "source") == [length, length]
    page.keyboard.press("Shift+ArrowDown")
    page.keyboard.press("Shift+ArrowDown")
    assert ends(page, "source") == [length, length]
    page.keyboard.press("Control+ArrowUp")
    last = ends(page, "source")[1]
    assert last is not None and 0 < last < length
    for _ in range(len(sentences) + 1):
        page.keyboard.press("Control+ArrowUp")
    assert ends(page, "source") == [0, 0]
    page.keyboard.press("Shift+ArrowUp")
    assert ends(page, "source") == [0, 0]
    page.keyboard.press("Control+ArrowDown")
    assert ends(page, "source")[1] not in (None, 0)
