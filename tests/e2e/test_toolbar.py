"""The annotation page's toolbar keeps its height between a done and a not-done sample: the done badge and "Mark not
done" sit beside the summary's heading, so the texts do not jump when an annotator moves on or presses Shift+D."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import SampleReview
from tests.e2e.annotation_helpers import open_sample

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [1280, 1440])
def test_the_texts_stay_put_between_done_and_not_done(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any, width: int
) -> None:
    first, second, _ = batch.samples.order_by("position")
    SampleReview.objects.create(sample=first, annotator=alice, round=1, done=True)
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, alice)

    open_sample(page, live_server, second)
    expect(page.locator('[data-role="done-badge"]')).to_be_hidden()
    toolbar_open = page.locator(".toolbar").bounding_box()["height"]
    summary_open = page.locator('[data-role="summary"]').bounding_box()["y"]

    open_sample(page, live_server, first)
    expect(page.locator('[data-role="done-badge"]')).to_be_visible()
    expect(page.locator('[data-role="mark-not-done"]')).to_be_visible()
    assert page.locator(".toolbar").bounding_box()["height"] == toolbar_open
    assert page.locator('[data-role="summary"]').bounding_box()["y"] == summary_open

    # Shift+D un-marks it in place: badge and button go, the text does not move.
    page.keyboard.press("Shift+D")
    expect(page.locator('[data-role="done-badge"]')).to_be_hidden()
    assert page.locator('[data-role="summary"]').bounding_box()["y"] == summary_open
