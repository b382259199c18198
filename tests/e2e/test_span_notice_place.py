"""Where the span page's passing notices show on a wide screen: over the foot of the source's box, above its legend.
Over the site's top bar they covered the page's heading (batch and round): in round 2, stepping past the other
annotators' last span said so right over it. They cover no heading, no toolbar control, no span list, no legend."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Sample
from tests.e2e.annotation_helpers import open_sample
from tests.e2e.test_span_round_two_room import open_round_two

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

COVERED = ["h1", ".guidelines-link", "#annotator > .toolbar", '[data-role="span-list"]', '[data-role="others-list"]', ".legend",
           '[data-role="summary"]']


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1366, 768), (1024, 768)])
def test_the_others_last_span_notice_covers_no_heading_or_control(
    page: Page, live_server: Any, log_in: Any, alice: Any, bob: Any, batch: Any, sample: Sample,
    width: int, height: int
) -> None:
    # The demo's names, as long as a real project's: the heading reaches the top bar's middle.
    batch.project.name = "Demo: news summaries"
    batch.project.save(update_fields=["name"])
    batch.name = "demo-batch-2"
    batch.save(update_fields=["name"])
    open_round_two(batch, sample, alice, bob)
    page.set_viewport_size({"width": width, "height": height})
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.locator('[data-role="other-span"]').last.focus()
    page.keyboard.press("Alt+ArrowDown")  # past the last: the page says so

    notice = page.locator('[data-role="notice"]')
    expect(notice).to_have_text("This is the other annotators' last span.")
    box = notice.bounding_box()
    assert box["y"] + box["height"] <= height and box["x"] + box["width"] <= width, box
    for selector in COVERED:
        for other in page.locator(selector).all():
            if other.is_visible():
                assert not overlaps(box, other.bounding_box()), selector
