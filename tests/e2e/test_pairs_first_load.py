"""The pair labeling page keeps the item's place while the first item loads: the guidelines panel below it stays
where it is when the item appears, and the browser records no layout shift."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, Route, expect

from annotate.models import PairItem
from tests.e2e.test_pairs_labeling import make_text_items, shown_item
from tests.pairs import conftest as pairs_fixtures

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

pairs_project = pairs_fixtures.pairs_project

GUIDELINES_TOP = "document.querySelector('[data-role=\"guidelines\"]').getBoundingClientRect().top + window.scrollY"
# Every layout shift since the page started (buffered), as the browser scores them for CLS.
LAYOUT_SHIFT_TOTAL = """() => new Promise((resolve) => {
  let total = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if (!entry.hadRecentInput) total += entry.value;
  });
  observer.observe({ type: "layout-shift", buffered: true });
  requestAnimationFrame(() => requestAnimationFrame(() => { observer.disconnect(); resolve(total); }));
})"""


def test_the_guidelines_do_not_move_when_the_first_item_arrives(
    page: Page, live_server: Any, log_in: Any, alice: Any, pairs_project: Any
) -> None:
    first = make_text_items(pairs_project)[0]
    log_in(page, alice)
    held: list[Route] = []
    # The first item's request waits until the page without it has been measured.
    page.route(re.compile(r"/api/pairs/next/"), lambda route: held.append(route))
    page.goto(live_server.url + reverse("pairs-label", args=[pairs_project.slug]))
    deadline = time.monotonic() + 15
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert held, "the page never asked for its first item"
    expect(page.locator('[data-role="loading"]')).to_be_visible()
    assert page.locator("#pair-labeler").get_attribute("data-item-id") is None
    before = page.evaluate(GUIDELINES_TOP)

    held[0].continue_()
    shown_item(page, PairItem.objects.get(pk=first.pk))
    expect(page.locator("#pair-labeler.ready")).to_be_attached()
    expect(page.locator('[data-role="loading"]')).to_be_hidden()

    assert page.evaluate(GUIDELINES_TOP) == pytest.approx(before, abs=0.5)
    assert page.evaluate(LAYOUT_SHIFT_TOTAL) < 0.01
