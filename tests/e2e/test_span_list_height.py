"""Round 2 of the span page: the "Spans" section takes the height of its spans. It used to stretch to fill the
summary column, so with few spans a large blank area pushed the other annotators' spans to the window's foot; and on
a phone 40 spans pushed them two screens down. Now a long list scrolls inside itself and what follows stays near."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page

from annotate.models import Sample, SpanAnnotation
from tests.e2e.annotation_helpers import open_sample
from tests.e2e.test_span_page_polish import open_round_two

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SCREENS = {"1280x800": (1280, 800), "1920x1080": (1920, 1080), "390x844": (390, 844)}
# Nothing between the last thing the Spans section shows and the next section's heading but the margins (px).
MOST_GAP = 24

# Bounding boxes (viewport px) of the parts of the summary column, and the scroll sizes of its boxes.
LAYOUT = """() => {
  const box = (selector) => {
    const element = document.querySelector(selector);
    if (!element || !element.getClientRects().length) return null;
    const rect = element.getBoundingClientRect();
    return {top: rect.top, bottom: rect.bottom, height: rect.height, scroll: element.scrollHeight,
            client: element.clientHeight};
  };
  const shown = [...document.querySelectorAll('.span-pane > *')].filter((e) => e.getClientRects().length);
  return {
    spanPane: box('.span-pane'), list: box('[data-role="span-list"]'), others: box('[data-role="others"]'),
    othersList: box('[data-role="others-list"]'), column: box('.column-summary'),
    contentBottom: Math.max(...shown.map((e) => e.getBoundingClientRect().bottom)),
    page: {scroll: document.scrollingElement.scrollHeight, client: innerHeight},
  };
}"""


def own_spans(sample: Sample, user: Any, count: int) -> None:
    """``count`` round-1 spans of ``user`` over the summary's words and runs of words (copied into round 2)."""
    words = [match.span() for match in re.finditer(r"\w+", sample.summary)]
    for i in range(count):
        first = i % len(words)
        last = min(first + i // len(words), len(words) - 1)
        start, end = words[first][0], words[last][1]
        SpanAnnotation.objects.create(sample=sample, annotator=user, round=1, start=start, end=end,
                                      text=sample.summary[start:end], labels=["Benign"])


@pytest.fixture
def round_two(alice: Any, bob: Any, batch: Any, sample: Sample) -> Any:
    """Round 2 with bob's two round-1 spans shown to alice; alice's own spans are made by the test."""
    def open_with(count: int) -> Sample:
        own_spans(sample, alice, count)
        for words in ("Tuesday", "national government"):
            start = sample.summary.index(words)
            SpanAnnotation.objects.create(sample=sample, annotator=bob, round=1, start=start,
                                          end=start + len(words), text=words, labels=["Benign"])
        open_round_two(batch, alice, bob)
        return sample
    return open_with


def layout_of(page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample, screen: str) -> dict[str, Any]:
    width, height = SCREENS[screen]
    page.set_viewport_size({"width": width, "height": height})
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.wait_for_function(f"document.querySelectorAll('[data-role=\"span-list\"] > li').length === "
                           f"{SpanAnnotation.objects.filter(sample=sample, annotator=alice, round=2).count()}")
    return page.evaluate(LAYOUT)


@pytest.mark.parametrize("screen", ["1280x800", "1920x1080"])
@pytest.mark.parametrize("count", [0, 2, 40])
def test_on_wide_screens_the_spans_section_is_as_tall_as_its_spans_and_the_others_stay_in_view(
    page: Page, live_server: Any, log_in: Any, alice: Any, round_two: Any, count: int, screen: str
) -> None:
    found = layout_of(page, live_server, log_in, alice, round_two(count), screen)
    others, column = found["others"], found["column"]
    # No blank area: the next section starts right under the last thing the Spans section shows.
    assert others["top"] - found["contentBottom"] <= MOST_GAP, found
    assert found["spanPane"]["bottom"] - found["contentBottom"] <= MOST_GAP, found
    # The other annotators' section is whole in the window, and neither the column nor the page scrolls to it.
    assert others["bottom"] <= min(column["bottom"], found["page"]["client"]) + 1, found
    assert column["scroll"] <= column["client"] + 1, found
    assert found["page"]["scroll"] <= found["page"]["client"], found
    if count == 0:
        assert found["list"] is None, found  # the one-line empty state instead
    elif count == 2:
        assert found["list"]["scroll"] <= found["list"]["client"], found  # whole, no inner scrollbar
    else:
        assert found["list"]["scroll"] > found["list"]["client"], found  # 40 spans scroll inside the list
        assert found["list"]["height"] >= 80, found  # and the list keeps room for a few of them


@pytest.mark.parametrize("count", [2, 40])
def test_on_a_phone_a_long_span_list_scrolls_inside_itself_and_the_others_follow_it(
    page: Page, live_server: Any, log_in: Any, alice: Any, round_two: Any, count: int
) -> None:
    found = layout_of(page, live_server, log_in, alice, round_two(count), "390x844")
    assert found["others"]["top"] - found["list"]["bottom"] <= MOST_GAP, found
    if count == 2:
        assert found["list"]["scroll"] <= found["list"]["client"], found
    else:
        assert found["list"]["scroll"] > found["list"]["client"], found
        assert found["list"]["height"] <= 0.6 * SCREENS["390x844"][1] + 1, found  # the others a short scroll away
