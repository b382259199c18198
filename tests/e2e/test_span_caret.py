"""Keyboard annotating span after span: after a label key saves the selection, Shift+arrows go on from the span's
end to the next words, not back to the start of the summary, so no click is needed between spans."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Sample
from tests.e2e.annotation_helpers import eventually, open_sample, saved_spans, select_words

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_shift_arrows_after_a_label_key_select_the_words_after_the_span(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    # "Lintown's Harbour Bridge reopened on Tuesday after nine weeks of repairs. The 12.4 million euro project ..."
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.focus('[data-role="summary"]')
    select_words(page, "summary", sample.summary, "nine weeks")
    page.keyboard.press("1")
    expect(page.locator('[data-role="span-list"] li')).to_have_count(1)

    page.keyboard.press("Shift+Control+ArrowRight")
    page.keyboard.press("Shift+Control+ArrowRight")

    assert page.evaluate("window.getSelection().toString()").strip() == "of repairs"
    page.keyboard.press("2")
    expect(page.locator('[data-role="span-list"] li')).to_have_count(2)
    spans = eventually(lambda: len(saved_spans(sample, alice)) == 2 and saved_spans(sample, alice))
    assert [(span.text, span.labels[-1]) for span in spans] == [
        ("nine weeks", "Unwanted.Intrinsic"),
        ("of repairs", "Unwanted.Extrinsic"),
    ]
