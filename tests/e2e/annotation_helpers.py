"""Helpers shared by the annotation page's browser tests: selecting text by code points, opening a
sample, reading the caret and moving the focus by keyboard, waiting for the page's asynchronous saves, and making
spans directly in the database."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.db.utils import OperationalError
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Sample, SpanAnnotation

# Selects [start, end) of a text given in Unicode code points, walking the text
# nodes the way the page renders them, then tells the page like a mouse would.
SELECT_BY_CODE_POINTS = """
([role, start, end]) => {
  const el = document.querySelector(`[data-role="${role}"]`);
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  let cp = 0, startPoint = null, endPoint = null, last = null;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    let unit = 0;
    for (const ch of node.data) {
      if (cp === start && !startPoint) startPoint = [node, unit];
      if (cp === end && !endPoint) endPoint = [node, unit];
      cp += 1; unit += ch.length;
    }
    last = node;
  }
  if (!endPoint && cp === end) endPoint = [last, last.data.length];
  if (!startPoint || !endPoint) throw new Error(`offsets ${start}..${end} outside text of ${cp}`);
  const range = document.createRange();
  range.setStart(startPoint[0], startPoint[1]);
  range.setEnd(endPoint[0], endPoint[1]);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  el.dispatchEvent(new MouseEvent("mouseup", {bubbles: true}));
  return selection.toString();
}
"""

# A browser that says it runs on macOS: Playwright then reports userAgentData.platform "macOS", and the page lets
# Option+arrows move by word.
MAC_AGENT = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Safari/537.36"
)

# The caret in the focused summary, in UTF-16 units from the text's start.
CARET = """() => {
  const el = document.querySelector('[data-role="summary"]');
  const selection = window.getSelection();
  if (!selection.rangeCount || !el.contains(selection.focusNode)) return null;
  const range = document.createRange();
  range.setStart(el, 0);
  range.setEnd(selection.focusNode, selection.focusOffset);
  return range.toString().length;
}"""


def tab_until(page: Page, selector: str, most: int = 20) -> None:
    """Press Tab until the element matching ``selector`` has the focus (the test fails if it never does)."""
    for _ in range(most):
        if page.evaluate("(selector) => document.activeElement.matches(selector)", selector):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {selector}")


def sample_url(live_server: Any, sample: Sample, round: int | None = None) -> str:
    url = live_server.url + reverse("sample", args=[sample.project.slug, sample.pk])
    return f"{url}?round={round}" if round else url


def select(page: Page, role: str, start: int, end: int) -> str:
    return page.evaluate(SELECT_BY_CODE_POINTS, [role, start, end])


def select_words(page: Page, role: str, text: str, words: str) -> str:
    start = text.index(words)
    return select(page, role, start, start + len(words))


def eventually(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll the database until ``check`` returns something truthy (the page saves asynchronously).

    The test database is SQLite in shared-cache memory: a read while the live server's thread
    holds a write lock fails at once with "database table is locked" instead of waiting. Such a
    read is simply tried again.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = check()
        except OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            value = None
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def open_sample(page: Page, live_server: Any, sample: Sample, round: int | None = None) -> None:
    page.goto(sample_url(live_server, sample, round))
    expect(page.locator("#annotator.ready")).to_be_visible()


def wait_until_settled(page: Page) -> None:
    """Wait until the sample has been shown long enough for D (and Done) to count: a press in its first moments is
    ignored, so that a quick second D never marks the next sample done unread (static/annotate/done.js)."""
    expect(page.locator('#annotator[data-settled="true"]')).to_be_attached()


def saved_spans(sample: Sample, user: Any) -> list[SpanAnnotation]:
    return list(SpanAnnotation.objects.filter(sample=sample, annotator=user).order_by("start", "id"))


def make_span(sample: Sample, user: Any, words: str, labels: list[str], note: str = "") -> SpanAnnotation:
    start = sample.summary.index(words)
    return SpanAnnotation.objects.create(
        sample=sample, annotator=user, round=1, start=start, end=start + len(words), text=words,
        labels=labels, note=note,
    )


# Focus the summary and put a bare caret at a UTF-16 offset of its text.
PUT_CARET = """(at) => {
  const el = document.querySelector('[data-role="summary"]');
  el.focus();
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  let seen = 0;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (at <= seen + node.data.length) {
      window.getSelection().setBaseAndExtent(node, at - seen, node, at - seen);
      return;
    }
    seen += node.data.length;
  }
  throw new Error(`offset ${at} outside the summary`);
}"""
