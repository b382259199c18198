"""At 200% zoom (a 1280x720 screen is a 640x360 window, the page in one flowing column, the toolbar not sticky) a
label key saves a span without scrolling the window: the new span and the caret after it stay where the annotator
was looking. Only the span list's own box may scroll to show the new item."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from annotate.models import Sample
from tests.e2e.annotation_helpers import open_sample

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# Where the window is, and where the active span's words are, in the window's pixels.
WHERE = """() => {
  const seg = document.querySelector('[data-role="summary"] .seg.active');
  const box = seg ? seg.getBoundingClientRect() : null;
  return {scrollY: Math.round(window.scrollY), height: window.innerHeight,
          seg: box ? [Math.round(box.top), Math.round(box.bottom)] : null};
}"""


def test_a_label_key_at_200_percent_zoom_leaves_the_window_where_it_was(
    new_page: Any, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    page = new_page(viewport={"width": 640, "height": 360}, device_scale_factor=2)
    log_in(page, alice)
    open_sample(page, live_server, sample)
    before = page.evaluate(WHERE)

    for round_ in range(2):
        # A word at the caret, then the next: each saved with a label key, as a keyboard annotator works.
        page.keyboard.press("Control+ArrowRight")
        page.keyboard.press("Control+Shift+ArrowRight")
        page.keyboard.press("2")
        expect(page.locator("[data-span-id]")).to_have_count(round_ + 1)
        where = page.evaluate(WHERE)
        assert where["scrollY"] == before["scrollY"], (before, where)
        top, bottom = where["seg"]
        assert 0 <= top and bottom <= where["height"], where
