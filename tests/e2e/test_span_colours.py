"""Two labels of one category look different on the annotation page: each span is underlined, and its list entry
and label button marked, in its label's own colour (Unwanted.Intrinsic and Unwanted.Extrinsic by default), so an
annotator tells them apart in the text, not only in the span list."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Sample
from tests.e2e.annotation_helpers import make_span, open_sample

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# Where a word's underline colour is: the background layers (one line each) of the segment that holds it.
UNDERLINE_OF = """(words) => {
  const seg = [...document.querySelectorAll('[data-role="summary"] .seg')].find((s) => s.textContent === words);
  return seg ? getComputedStyle(seg).backgroundImage : `no segment reads ${words}`;
}"""


def rgb(hex_colour: str) -> str:
    red, green, blue = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({red}, {green}, {blue})"


def test_intrinsic_and_extrinsic_spans_are_drawn_in_their_own_colours(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    colours = {label["name"]: label.get("color") for label in sample.project.taxonomy["labels"]}
    make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    make_span(sample, alice, "national government", ["Unwanted", "Unwanted.Extrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)
    expect(page.locator("[data-span-id]")).to_have_count(2)

    intrinsic = page.evaluate(UNDERLINE_OF, "nine weeks")
    extrinsic = page.evaluate(UNDERLINE_OF, "national government")
    assert rgb(colours["Unwanted.Intrinsic"]) in intrinsic, intrinsic
    assert rgb(colours["Unwanted.Extrinsic"]) in extrinsic, extrinsic
    assert intrinsic != extrinsic

    swatches = page.locator(".span-item .span-swatch").evaluate_all(
        "(marks) => marks.map((mark) => getComputedStyle(mark).backgroundColor)")
    assert sorted(swatches) == sorted([rgb(colours["Unwanted.Intrinsic"]), rgb(colours["Unwanted.Extrinsic"])])
    button = page.locator('.label-button[data-label="Unwanted.Extrinsic"] .swatch')
    assert button.evaluate("(mark) => getComputedStyle(mark).backgroundColor") == rgb(colours["Unwanted.Extrinsic"])
    dots = page.locator(".span-item .chip .chip-dot").evaluate_all(
        "(marks) => marks.map((mark) => getComputedStyle(mark).backgroundColor)")
    assert sorted(dots) == sorted(swatches)
