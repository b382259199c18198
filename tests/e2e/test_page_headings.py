"""The pair labeling and audit pages each have one level-one heading (axe's page-has-heading-one), shown in the
header's trail: it takes no room from the item below."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, PairItem, Project
from tests.e2e.test_pairs_labeling import open_labeling, pairs_project, text_items
from tests.judging.audit_helpers import build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

__all__ = ["pairs_project", "text_items"]  # fixtures, imported for this module's tests

# The h1's box against the header's: a compact heading sits inside the header's one line.
BOXES = """() => {
  const heading = document.querySelector("h1").getBoundingClientRect();
  const header = document.querySelector("header.topbar").getBoundingClientRect();
  return {top: heading.top, bottom: heading.bottom, headerTop: header.top, headerBottom: header.bottom};
}"""


def assert_one_compact_heading(page: Page, text: str) -> None:
    heading = page.locator("h1")
    expect(heading).to_have_count(1)
    expect(heading).to_have_text(text)
    expect(heading).to_be_visible()
    box = page.evaluate(BOXES)
    assert box["headerTop"] <= box["top"] and box["bottom"] <= box["headerBottom"], box


def test_the_pair_labeling_page_has_one_h1(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    log_in(page, alice)
    open_labeling(page, live_server, text_items[0].project)
    assert_one_compact_heading(page, "Label pairs")


def test_the_audit_page_has_one_h1(page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch) -> None:
    scene = build_scene(project, batch)
    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[project.slug]))
    expect(page.locator("#auditor.ready")).to_be_attached()
    assert_one_compact_heading(page, "Audit queue")
