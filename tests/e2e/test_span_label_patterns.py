"""Spans differ by more than colour: each label's underline in the summary has a pattern of its own (solid, dashed,
dotted, …), taken from the label's place in the project's list, so Unwanted.Extrinsic's purple and Benign's blue,
alike under deuteranopia, still look different. The label buttons and the shortcut list show the same lines, and the
list says each pattern in words."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Sample
from tests.e2e.annotation_helpers import make_span, open_sample

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# How a segment's underline is drawn, colours left out: whatever tells two labels apart without colour.
DRAWING = """(el) => {
  const style = getComputedStyle(el);
  return [style.backgroundImage, style.backgroundSize, style.boxShadow, style.textDecorationStyle,
          style.borderBottomStyle].join(" | ");
}"""
COLOUR = re.compile(r"rgba?\([^)]*\)|#[0-9a-f]{3,8}\b|var\([^)]*\)", re.IGNORECASE)


def without_colour(drawing: str) -> str:
    return COLOUR.sub("C", drawing)


def segment(page: Page, words: str) -> Any:
    return page.locator('[data-role="summary"] .seg').filter(has_text=re.compile(f"^{re.escape(words)}$"))


def test_extrinsic_and_benign_spans_differ_without_their_colours(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Extrinsic"])
    make_span(sample, alice, "national government", ["Benign"])
    make_span(sample, alice, "Tuesday", ["Questionable"])
    log_in(page, alice)
    open_sample(page, live_server, sample)
    expect(page.locator("[data-span-id]")).to_have_count(3)

    drawings = {words: without_colour(segment(page, words).evaluate(DRAWING))
                for words in ("nine weeks", "national government", "Tuesday")}
    assert len(set(drawings.values())) == 3, drawings

    # The legend: the label buttons' names carry the same line as their spans, and the shortcut list says it in words.
    for words, label in (("nine weeks", "Unwanted.Extrinsic"), ("national government", "Benign")):
        name = page.locator(f'.label-button[data-label="{label}"] [data-cue-label]')
        assert without_colour(name.evaluate("(el) => getComputedStyle(el).backgroundSize")) in drawings[words]
    page.keyboard.press("?")
    legend = page.locator('[data-role="shortcuts"] [data-role="cue-legend"]')
    expect(legend).to_be_visible()
    expect(legend).to_contain_text("Unwanted.Extrinsic dashed")
    expect(legend).to_contain_text("Benign dash-dot")
