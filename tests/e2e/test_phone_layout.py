"""On a 390x844 phone nothing runs past the screen's right edge (the top bar's "Log out" did), and on the span
annotation page the sticky toolbar leaves the summary in the screen's upper half (it took a quarter of the screen
and pushed the summary to y 431)."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Sample
from tests.e2e.annotation_helpers import make_span, open_sample

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
# Elements past the right edge, leaving out the content of boxes that scroll sideways (a wide table's cells).
PAST_THE_EDGE = """() => [...document.querySelectorAll('body *')]
  .filter((e) => e.getBoundingClientRect().width > 0 && e.getBoundingClientRect().right > window.innerWidth + 1)
  .filter((e) => !e.parentElement.closest('table.grid'))
  .map((e) => `${e.tagName.toLowerCase()}.${e.className} right ${Math.round(e.getBoundingClientRect().right)}`)"""


def assert_nothing_past_the_edge(page: Page) -> None:
    assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    assert page.evaluate(PAST_THE_EDGE) == []


def test_the_home_page_fits_a_phone(page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample) -> None:
    page.set_viewport_size(PHONE)
    log_in(page, alice)
    page.goto(live_server.url + reverse("home"))
    expect(page.get_by_role("button", name="Log out")).to_be_in_viewport(ratio=1)
    assert_nothing_past_the_edge(page)


@pytest.mark.parametrize("name", ["project", "agreement"])
def test_admin_pages_with_wide_tables_and_forms_fit_a_phone(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, sample: Sample, name: str
) -> None:
    """Their tables scroll in their own boxes and their selects shrink: the page itself stays 390 px wide."""
    page.set_viewport_size(PHONE)
    log_in(page, admin_user)
    page.goto(live_server.url + reverse(name, args=[sample.project.slug]))
    expect(page.locator("main")).to_be_visible()
    assert_nothing_past_the_edge(page)


def test_the_annotation_page_fits_a_phone_with_the_summary_in_the_upper_half(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    page.set_viewport_size(PHONE)
    log_in(page, alice)
    open_sample(page, live_server, sample)
    expect(page.locator("[data-span-id]")).to_have_count(1)
    assert_nothing_past_the_edge(page)
    summary_top = page.locator('[data-role="summary"]').evaluate("(e) => e.getBoundingClientRect().top")
    assert summary_top < PHONE["height"] / 2, summary_top
    toolbar = page.locator(".annotator .toolbar").evaluate("(e) => e.getBoundingClientRect().height")
    assert toolbar < 160, toolbar
    # The label buttons stay reachable by touch while the page scrolls (the toolbar is sticky).
    page.mouse.wheel(0, 600)
    expect(page.locator('.label-button[data-label="Unwanted.Intrinsic"]')).to_be_in_viewport()
