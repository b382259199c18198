"""Round 2 on a laptop: choosing one's own span (Alt+Down) opens its editor, and the other annotators' spans, the point
of round 2, keep room for at least two of their items. The editor used to take 210 px and squeeze both lists to
42 px boxes, the others' showing less than one line. On a 1280x720 screen the two items are in view at once; on
shorter screens (1280x600, 1024x600) the summary column scrolls as a whole to them, never squeezing their list."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Sample
from annotate.services import rounds, spans
from tests.e2e.annotation_helpers import make_span, open_sample

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# The other annotators' list box, its first two items, and the summary column, in window pixels.
ROOM = """() => {
  const rect = (el) => { const r = el.getBoundingClientRect(); return {top: r.top, bottom: r.bottom}; };
  const list = document.querySelector('[data-role="others-list"]');
  const column = document.querySelector('.column-summary');
  return {list: rect(list), listClient: list.clientHeight, listScroll: list.scrollTop,
          items: [...list.children].slice(0, 2).map(rect), column: rect(column), window: innerHeight,
          editor: document.querySelector('[data-role="span-editor"]').getBoundingClientRect().height};
}"""


def open_round_two(batch: Any, sample: Sample, alice: Any, bob: Any) -> None:
    make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"], note="The source says eight.")
    make_span(sample, bob, "Tuesday", ["Questionable"], note="Not in the source.")
    make_span(sample, bob, "12.4 million euro", ["Benign"])
    make_span(sample, bob, "national government", ["Unwanted", "Unwanted.Extrinsic"], note="The source names the city.")
    for person in (alice, bob):
        for each in batch.samples.all():
            spans.mark_sample_done(each, person, round=1, done=True)
    rounds.open_reconciliation_round(batch)


def whole(item: dict[str, float], *boxes: dict[str, float]) -> bool:
    return all(box["top"] - 1 <= item["top"] and item["bottom"] <= box["bottom"] + 1 for box in boxes)


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1280, 600), (1024, 600), (1024, 768)])
def test_the_editor_leaves_room_for_two_of_the_others_spans(
    page: Page, live_server: Any, log_in: Any, alice: Any, bob: Any, batch: Any, sample: Sample,
    width: int, height: int
) -> None:
    open_round_two(batch, sample, alice, bob)
    page.set_viewport_size({"width": width, "height": height})
    log_in(page, alice)
    open_sample(page, live_server, sample)
    expect(page.locator('[data-role="other-span"]')).to_have_count(3)

    page.keyboard.press("Alt+ArrowDown")
    expect(page.locator('[data-role="span-editor"]')).to_be_visible()
    room = page.evaluate(ROOM)
    first, second = room["items"]
    # The list's own box holds both items whole, not a 42 px slit.
    assert second["bottom"] - room["list"]["top"] + room["listScroll"] <= room["listClient"] + 4, room
    if (width, height) == (1280, 720):
        # In view at once, with the editor open: nothing to scroll.
        window = {"top": 0, "bottom": room["window"]}
        assert whole(first, room["list"], room["column"], window) and whole(second, room["list"], room["column"], window), room
    else:
        # A shorter screen: the column scrolls as a whole to them.
        page.locator(".column-summary").evaluate("(column) => { column.scrollTop = column.scrollHeight; }")
        room = page.evaluate(ROOM)
        window = {"top": 0, "bottom": room["window"]}
        for item in room["items"]:
            assert whole(item, room["list"], room["column"], window), room
