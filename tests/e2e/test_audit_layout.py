"""The audit page does not move under the auditor's eyes: the verdict form's controls keep their place and size
from a long output to short ones and when a score is chosen, and on a 1366x768 screen they are all in view
without scrolling; the next output opens at its top however far down the last one was scrolled (a phone); and
Esc after ? brings the page back to where it was."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from judging.models import AuditItem
from tests.e2e.audit_page_helpers import add_output_served_first, keys_ready
from tests.judging.audit_helpers import AuditScene, build_scene, flag, judge_sample, make_run

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

FILLER = "The harbour board met again that week to hear the pilots, the traders and the town clerk on the matter. "
LONG_SOURCE = FILLER * 12 + "In the end the pier was rebuilt in stone."
LONG_OUTPUT = FILLER * 6 + "In the end the pier was rebuilt in timber."
# A flag reason long enough to take two lines at 1366 px if it were let wrap.
LONG_REASON = "flagged by the first pass and by a keyword screen: " + "timber, stone, pier, harbour board; " * 6

CONTROLS = {
    "score 1": '[data-score="1"]',
    "score 3": '[data-score="3"]',
    "score 5": '[data-score="5"]',
    "agree": '[data-role="agree"]',
    "reasoning wrong": '[data-role="reasoning-wrong"]',
    "note": '[data-role="note"]',
    "save": '[data-role="submit"]',
}
BOXES = """(controls) => {
  const boxes = {};
  for (const [name, selector] of Object.entries(controls)) {
    const rect = document.querySelector(selector).getBoundingClientRect();
    boxes[name] = [rect.left, rect.top, rect.width, rect.height].map((value) => Math.round(value * 10) / 10);
  }
  return boxes;
}"""
# The item's top: where its flag line starts, against the sticky toolbar's bottom and the window.
ITEM_TOP = """() => {
  const why = document.querySelector('#audit-view .audit-why').getBoundingClientRect();
  const toolbar = document.querySelector('#audit-view .toolbar').getBoundingClientRect();
  const source = document.querySelector('[data-role="source"]').getBoundingClientRect();
  return {why: why.top, toolbarBottom: toolbar.bottom, sourceTop: source.top, height: innerHeight, scrollY};
}"""


def add_long_item(scene: AuditScene, project: Project, batch: Batch) -> AuditItem:
    """A long source and output with a long flag reason, served before the scene's three (score 1 is the worst)."""
    sample, flagged_by = add_output_served_first(project, batch, "long", LONG_SOURCE, LONG_OUTPUT)
    judge_sample(make_run(scene.explainer), sample, score=2, reasoning="The output says timber; the source says stone.")
    return flag(sample, flagged_by, reason=LONG_REASON)


def open_audit(page: Page, live_server: Any, log_in: Any, scene: AuditScene, first: AuditItem) -> None:
    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[scene.project.slug]))
    expect(page.locator("#auditor.ready")).to_be_attached()
    settled(page, first)


def settled(page: Page, item: AuditItem) -> None:
    view = page.locator("#audit-view")
    expect(view).to_have_attribute("data-item-id", str(item.pk))
    expect(view).not_to_have_class(re.compile(r"htmx-(settling|swapping|request)"))
    keys_ready(page)
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")


def moved(before: dict[str, list[float]], after: dict[str, list[float]]) -> list[str]:
    return [f"{name}: {before[name]} -> {after[name]}" for name in before if before[name] != after[name]]


def test_the_verdict_controls_are_in_view_without_scrolling_on_a_laptop(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    long = add_long_item(scene, project, batch)
    page.set_viewport_size({"width": 1366, "height": 768})
    open_audit(page, live_server, log_in, scene, long)

    for item in [long, scene.queue_order[0]]:
        settled(page, item)
        for name, (_, top, _, height) in page.evaluate(BOXES, CONTROLS).items():
            assert top >= 0 and top + height <= 768, f"{name} is out of view at 1366x768: top {top}, height {height}"
        page.keyboard.press("3")
        page.keyboard.press("Enter")
    settled(page, scene.queue_order[1])


def test_the_verdict_controls_keep_their_place_from_item_to_item_and_when_chosen(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    long = add_long_item(scene, project, batch)
    page.set_viewport_size({"width": 1366, "height": 768})
    open_audit(page, live_server, log_in, scene, long)
    expect(page.locator('[data-role="source"]')).to_contain_text("rebuilt in stone")
    reference = page.evaluate(BOXES, CONTROLS)

    for item in [long, *scene.queue_order]:
        settled(page, item)
        assert page.evaluate("scrollY") == 0  # the boxes as the window shows them, the page at its top
        assert not (shifted := moved(reference, page.evaluate(BOXES, CONTROLS))), f"item {item.pk}: {shifted}"
        # Choosing a score, or agreeing, changes how the buttons look, never their size or where the others sit.
        for score in "15":
            page.keyboard.press(score)
            expect(page.locator(f'[data-score="{score}"]')).to_have_attribute("aria-pressed", "true")
            assert not (shifted := moved(reference, page.evaluate(BOXES, CONTROLS))), f"score {score}: {shifted}"
        if page.locator('[data-role="agree"]').is_enabled():
            page.keyboard.press("a")
            expect(page.locator('[data-role="agree"]')).to_have_attribute("aria-pressed", "true")
            assert not (shifted := moved(reference, page.evaluate(BOXES, CONTROLS))), f"agreeing: {shifted}"
        page.keyboard.press("3")
        page.keyboard.press("Enter")
    expect(page.locator('[data-role="audit-empty"]')).to_be_visible()


def test_the_next_output_opens_at_its_top_after_scrolling_down_to_save_on_a_phone(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    long = add_long_item(scene, project, batch)
    page.set_viewport_size({"width": 390, "height": 844})
    open_audit(page, live_server, log_in, scene, long)

    for item, after in zip([long, *scene.queue_order[:2]], scene.queue_order, strict=True):
        settled(page, item)
        page.locator('[data-score="3"]').click()  # a phone: the form is reached by scrolling down
        page.locator('[data-role="submit"]').click()
        assert page.evaluate("scrollY") > 0  # the click scrolled the page down to the form
        settled(page, after)
        top = page.evaluate(ITEM_TOP)
        assert top["why"] >= top["toolbarBottom"] - 1, f"the item's top is hidden under the toolbar: {top}"
        assert top["sourceTop"] < top["height"], f"the source text starts below the window: {top}"


def test_escape_after_question_mark_brings_the_page_back_to_where_it_was(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    page.set_viewport_size({"width": 1366, "height": 680})
    open_audit(page, live_server, log_in, scene, scene.queue_order[0])
    page.evaluate("() => window.scrollTo(0, 40)")
    assert page.evaluate("scrollY") == 40

    page.keyboard.press("?")
    expect(page.locator('#audit-help [data-role="shortcuts"]')).to_be_visible()
    assert page.evaluate("scrollY") > 40  # the list, under the form, was brought into view

    page.keyboard.press("Escape")
    expect(page.locator('#audit-help [data-role="shortcuts"]')).to_be_hidden()
    assert page.evaluate("scrollY") == 40
