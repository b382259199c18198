"""The pair labeling page does not move under the labeler's eyes: a judge presses h/n/? for hours, so the answer
buttons, the toolbar and the texts' boxes keep their place from a short item to a long one and back, and the
item's highlighted span is in view in both texts however far down a long text it sits."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import PairItem, Project
from tests.e2e.test_pairs_labeling import make_text_items, open_labeling, shown_item
from tests.pairs import conftest as pairs_fixtures

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

pairs_project = pairs_fixtures.pairs_project

SHORT_ORIGINAL = "The ferry left at noon."
SHORT_PERTURBED = "The ferry left at dawn."
FILLER = "The harbour board met again that week to hear the pilots, the traders and the town clerk on the matter. "
# Near thirty lines in a pane of a 1280px window: more than a pane shows without scrolling, with the
# item's span near the end, so a page that did not scroll the pane would hide it.
LONG_ORIGINAL = FILLER * 14 + "In the end the pier was rebuilt in stone. " + FILLER * 2
LONG_PERTURBED = FILLER * 14 + "In the end the pier was rebuilt in timber. " + FILLER * 2
# The old and new words of the long item are long too: the question line must not wrap to a second line for them.
LONG_SWAP = ("rebuilt in stone", "rebuilt in timber")

# Where the controls a labeler's eyes and mouse go to are, in viewport pixels: what the person sees.
CONTROL_BOXES = """() => {
  const box = (selector) => {
    const rect = document.querySelector(selector).getBoundingClientRect();
    return [rect.left, rect.top, rect.width, rect.height].map((value) => Math.round(value * 10) / 10);
  };
  return {
    "answer H": box('[data-label="H"]'),
    "answer N": box('[data-label="N"]'),
    "answer ?": box('[data-label="?"]'),
    // The progress line's width follows its count ("10 items left" / "9 items left"); where it starts is what stays.
    "progress": box('[data-role="progress"]').filter((_, index) => index !== 2),
    "undo": box('[data-role="undo"]'),
    "original text": box('[data-role="original"]'),
    "changed text": box('[data-role="perturbed"]'),
  };
}"""

# Whether the target span of a pane lies inside the pane's visible box and inside the viewport.
TARGET_IN_VIEW = """(role) => {
  const pane = document.querySelector(`[data-role="${role}"]`);
  const target = pane.querySelector('[data-role="target-span"]');
  if (!target) return `no highlighted span in the ${role} text`;
  const box = pane.getBoundingClientRect();
  const top = box.top + pane.clientTop, bottom = top + pane.clientHeight;
  const span = target.getBoundingClientRect();
  if (span.top < top - 0.5 || span.bottom > bottom + 0.5) {
    return `the ${role} span (${span.top}..${span.bottom}) is outside its pane's view (${top}..${bottom})`;
  }
  if (span.top < 0 || span.bottom > window.innerHeight) {
    return `the ${role} span (${span.top}..${span.bottom}) is outside the window (0..${window.innerHeight})`;
  }
  return "";
}"""


def make_short_long_short(project: Project) -> list[PairItem]:
    """A short item, a long one and a short one, served in that order (the queue serves equal items by id)."""
    first = make_text_items(project, SHORT_ORIGINAL, SHORT_PERTURBED, [("noon", "dawn")], group="short-1")
    long = make_text_items(project, LONG_ORIGINAL, LONG_PERTURBED, [LONG_SWAP], group="long")
    last = make_text_items(project, SHORT_ORIGINAL, SHORT_PERTURBED, [("noon", "dawn")], group="short-2")
    return first + long + last


def boxes_after_settling(page: Page) -> dict[str, list[float]]:
    """The control boxes once the item's render and any scrolling it started are done (two frames later)."""
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    return page.evaluate(CONTROL_BOXES)


def moved(before: dict[str, list[float]], after: dict[str, list[float]]) -> list[str]:
    """The controls whose box differs by more than 1px, with both boxes, so a failure names what moved."""
    return [
        f"{name}: {before[name]} -> {after[name]}"
        for name in before
        if any(abs(a - b) > 1 for a, b in zip(before[name], after[name], strict=True))
    ]


ANSWERS_BELOW_THE_FOLD = """() => [...document.querySelectorAll('.pair-answer')]
  .filter((button) => button.getBoundingClientRect().bottom > window.innerHeight)
  .map((button) => `${button.dataset.label}: bottom ${button.getBoundingClientRect().bottom} > ${window.innerHeight}`)"""


def assert_answers_in_view(page: Page) -> None:
    """Every answer button is on screen without scrolling the page, at every window size a judge may use."""
    below = page.evaluate(ANSWERS_BELOW_THE_FOLD)
    assert below == [], f"answers below the fold: {below}"
    cut = page.locator(".pair-answer").evaluate_all(
        "(buttons) => buttons.filter((b) => b.scrollWidth > b.clientWidth + 1).map((b) => b.textContent.trim())")
    assert cut == [], f"answers whose words do not fit their button: {cut}"


def assert_target_in_view(page: Page) -> None:
    for role in ("original", "perturbed"):
        problem = page.evaluate(TARGET_IN_VIEW, role)
        assert problem == "", problem


@pytest.mark.parametrize(
    "viewport", [{"width": 1280, "height": 800}, {"width": 720, "height": 900}, {"width": 390, "height": 844}],
    ids=["desktop", "narrow", "phone"],
)
def test_the_controls_stay_put_from_a_short_item_to_a_long_one_and_back_with_the_span_in_view(
    page: Page, live_server: Any, log_in: Any, alice: Any, pairs_project: Project, viewport: dict[str, int]
) -> None:
    short, long, short_again = make_short_long_short(pairs_project)
    page.set_viewport_size(viewport)
    log_in(page, alice)
    open_labeling(page, live_server, pairs_project)
    shown_item(page, short)
    # A new judge starts with the guidelines open; a judge at work has them closed.
    page.keyboard.press("g")
    expect(page.locator('[data-role="guidelines"]')).not_to_have_attribute("open", "")
    at_short = boxes_after_settling(page)
    assert_target_in_view(page)
    assert_answers_in_view(page)

    page.keyboard.press("h")
    shown_item(page, long)
    at_long = boxes_after_settling(page)
    changes = moved(at_short, at_long)
    assert not changes, "moved from the short item to the long one:\n" + "\n".join(changes)
    assert_target_in_view(page)
    assert_answers_in_view(page)

    page.keyboard.press("n")
    shown_item(page, short_again)
    at_short_again = boxes_after_settling(page)
    changes = moved(at_long, at_short_again)
    assert not changes, "moved from the long item to the short one:\n" + "\n".join(changes)
    assert_target_in_view(page)


def test_a_long_text_scrolls_in_its_own_pane_by_keyboard_and_the_answer_keys_still_answer(
    page: Page, live_server: Any, log_in: Any, alice: Any, pairs_project: Project
) -> None:
    short, long, short_again = make_short_long_short(pairs_project)
    page.set_viewport_size({"width": 1280, "height": 800})
    log_in(page, alice)
    open_labeling(page, live_server, pairs_project)
    shown_item(page, short)
    page.keyboard.press("n")
    shown_item(page, long)

    pane = page.locator('[data-role="perturbed"]')
    assert pane.evaluate("e => e.scrollHeight > e.clientHeight"), "the long text should overflow its pane"
    scroll_before = pane.evaluate("e => e.scrollTop")
    assert scroll_before > 0, "the pane should have scrolled down to the item's span near the text's end"
    window_before = page.evaluate("() => window.scrollY")
    # Reached with Tab like any control, the pane scrolls with the keys a reader uses.
    page.locator('[data-role="original"]').focus()
    page.keyboard.press("Tab")
    expect(pane).to_be_focused()
    page.keyboard.press("Home")
    page.wait_for_function("() => document.querySelector('[data-role=\"perturbed\"]').scrollTop === 0")
    assert page.evaluate("() => window.scrollY") == window_before, "Home scrolled the page, not the pane"

    # The answer keys answer from the focused pane, and the next item's pane starts from its top.
    page.keyboard.press("h")
    shown_item(page, short_again)
    expect(pane).to_be_focused()
    assert pane.evaluate("e => e.scrollTop") == 0
