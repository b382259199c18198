"""The pair labeling page's passing notices never cover an answer button: a judge who reads "taken back: answer
again" must be able to see (and on a phone, tap) the answers at once. Checked on a 1366x768 laptop and a 390x844
phone, for the undo notice and for the longest notice an answer can bring (a 409 explained in one sentence)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import PairItem, Project
from tests.e2e.test_pairs_labeling import make_text_items, open_labeling, shown_item
from tests.pairs import conftest as pairs_fixtures

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

pairs_project = pairs_fixtures.pairs_project

VIEWPORTS = [{"width": 1366, "height": 768}, {"width": 390, "height": 844}]

# The notice's box, each answer button's box, the window's size; viewport pixels.
BOXES = """() => {
  const box = (el) => { const r = el.getBoundingClientRect(); return {left: r.left, top: r.top, right: r.right,
                                                                       bottom: r.bottom}; };
  return {
    notice: box(document.querySelector('[data-role="notice"]')),
    answers: Object.fromEntries([...document.querySelectorAll('[data-role="answers"] [data-label]')]
      .map((button) => [button.dataset.label, box(button)])),
    window: {width: window.innerWidth, height: window.innerHeight},
  };
}"""


def covered_answers(page: Page) -> list[str]:
    """The answers whose box the shown notice's box overlaps, with both boxes; the notice must be in the window."""
    expect(page.locator('[data-role="notice"]')).to_be_visible()
    found = page.evaluate(BOXES)
    notice, window = found["notice"], found["window"]
    assert notice["left"] >= 0 and notice["top"] >= 0, f"the notice starts outside the window: {notice}"
    assert notice["right"] <= window["width"] and notice["bottom"] <= window["height"], (
        f"the notice ends outside the {window} window: {notice}")
    assert len(found["answers"]) == 3
    return [
        f"{label}: answer {box} under notice {notice}" for label, box in found["answers"].items()
        if box["left"] < notice["right"] and notice["left"] < box["right"]
        and box["top"] < notice["bottom"] and notice["top"] < box["bottom"]
    ]


def start_labeling(page: Page, live_server: Any, log_in: Any, judge: Any, project: Project,
                   viewport: dict[str, int]) -> list[PairItem]:
    # Long words make the longest undo notice the page writes ("... on "<the words>" was taken back ...").
    items = make_text_items(project, "The old bridge was opened by the mayor in the spring of 1911.",
                            "The old bridge was opened by the Duke of Northumberland in the spring of 1911.",
                            [("the mayor", "the Duke of Northumberland")])
    items += make_text_items(project, group="t2")
    page.set_viewport_size(viewport)
    log_in(page, judge)
    open_labeling(page, live_server, project)
    shown_item(page, items[0])
    return items


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=["laptop", "phone"])
def test_the_undo_notice_covers_no_answer_button(
    page: Page, live_server: Any, log_in: Any, alice: Any, pairs_project: Project, viewport: dict[str, int]
) -> None:
    items = start_labeling(page, live_server, log_in, alice, pairs_project, viewport)
    page.keyboard.press("n")
    shown_item(page, items[1])
    page.keyboard.press("u")
    shown_item(page, items[0])
    expect(page.locator('[data-role="notice"]')).to_contain_text('"the Duke of Northumberland" was taken back')
    covered = covered_answers(page)
    assert not covered, "the undo notice covers answers:\n" + "\n".join(covered)


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=["laptop", "phone"])
def test_a_notice_after_an_answer_covers_no_answer_button(
    page: Page, live_server: Any, log_in: Any, alice: Any, pairs_project: Project, viewport: dict[str, int]
) -> None:
    from annotate.services.pairs.queue import record_judgement

    items = start_labeling(page, live_server, log_in, alice, pairs_project, viewport)
    record_judgement(pairs_project, alice, items[0].pk, "N")  # answered elsewhere: the page's answer gets a 409
    page.keyboard.press("h")
    expect(page.locator('[data-role="notice"]')).to_contain_text("Not saved:")
    shown_item(page, items[1])
    covered = covered_answers(page)
    assert not covered, "the notice after an answer covers answers:\n" + "\n".join(covered)
