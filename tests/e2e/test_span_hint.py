"""The annotation page's selection hint keeps one line however long the selection: the span list under it does not
jump while an annotator selects, and the hint still says which keys save the selection."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Sample
from tests.e2e.annotation_helpers import open_sample, select_words

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LONG_SELECTION = "Lintown's Harbour Bridge reopened on Tuesday after nine weeks of repairs"


def test_a_long_selection_does_not_push_the_span_list_down(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    hint = page.locator(".column-summary .hint")
    span_pane = page.locator(".span-pane")
    hint_height = hint.bounding_box()["height"]
    pane_top = span_pane.bounding_box()["y"]

    select_words(page, "summary", sample.summary, LONG_SELECTION)

    expect(hint).to_contain_text("Press 1–4 or click a label to save “Lintown's Harbour Bridge")
    assert hint.bounding_box()["height"] == hint_height
    assert span_pane.bounding_box()["y"] == pane_top

    # The hint still works as before: the label key saves the selection.
    page.keyboard.press("1")
    expect(page.locator('[data-role="span-list"] li')).to_have_count(1)
    expect(hint).to_have_text("Select words, then press a label key to save a span.")
