"""The label editor fits a 1366x768 laptop screen: its table ran past the right edge (the Delete column
clipped, the whole page scrolling sideways). It must fit with the messages a refused save puts beside the rows too.

Here it fitted by 10 px, with headless Chromium's scrollbars taking no room and this machine's fonts: a laptop's
scrollbar (17 px) or a wider font pushed it out. So the table must also fit at its narrowest in 85% of its room."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Project

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1366, "height": 768}
HEADROOM = 0.85
# The table's narrowest width (min-content: every text wrapped as far as it goes) against the room its box gives it.
NARROWEST = """() => {
  const table = document.querySelector('table.labels');
  const room = table.parentElement.clientWidth;
  const before = table.style.width;
  table.style.width = 'min-content';
  const narrowest = table.getBoundingClientRect().width;
  table.style.width = before;
  return {narrowest, room};
}"""
WIDTHS = """() => ({
  page: document.documentElement.scrollWidth,
  screen: document.documentElement.clientWidth,
  table: document.querySelector('table.labels').getBoundingClientRect().right,
  delete: Math.max(...[...document.querySelectorAll('table.labels input[name="delete"]')]
    .map((box) => box.getBoundingClientRect().right)),
})"""


def assert_the_editor_fits(page: Page) -> None:
    widths = page.evaluate(WIDTHS)
    assert widths["page"] <= widths["screen"], widths
    assert widths["table"] <= widths["screen"], widths
    assert 0 < widths["delete"] <= widths["screen"], widths
    table = page.evaluate(NARROWEST)
    assert table["narrowest"] <= HEADROOM * table["room"], table


def test_the_label_editor_fits_a_laptop_screen_with_and_without_row_messages(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project
) -> None:
    page.set_viewport_size(LAPTOP)
    log_in(page, admin_user)
    page.goto(live_server.url + reverse("label-set", args=[project.slug]))
    expect(page.locator("table.labels th", has_text="Delete")).to_be_in_viewport(ratio=1)
    assert_the_editor_fits(page)

    # A refused save puts a message beside the bad fields of the first row: the table still fits.
    page.locator('table.labels input[name="color"]').first.fill("not a colour at all")
    page.locator('table.labels input[name="hotkey"]').first.fill("?")
    page.get_by_role("button", name="Save as a new version").click()
    expect(page.locator('[data-role="errors"]')).to_be_visible()
    expect(page.locator('tr[data-row="1"] [data-error="color"]')).to_be_visible()
    assert_the_editor_fits(page)
