"""Whose quote is highlighted: the texts highlight one judge's quoted passages at a time, those of the chosen judge's
card (the top one first), and a card that quotes nothing says so. j and k, or a click on a card, choose another
judge; the others' passages are plain text meanwhile, so the auditor never has to hunt for whose a highlight is."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from annotate.models import Batch, Project
from tests.e2e.audit_page_helpers import add_output_served_first, open_audit, shown
from tests.judging.audit_helpers import build_scene, flag, judge_sample, make_judge, make_run

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SOURCE = "The harbour opened in 1911. Mayor Ines Varga cut the ribbon. The pier was rebuilt in stone."
OUTPUT = "The harbour opened in 1923. Mayor Tom Price cut the ribbon. The pier was rebuilt in timber."
# The top card's judge (the explainer, the one "a" agrees with) quotes nothing; another judge quotes four passages.
QUIET_REASONING = "The dates and the mayor are wrong."
QUOTING_REASONING = 'It says "opened in 1923" where the source has "opened in 1911", and "Tom Price" for "Ines Varga".'
QUOTED = ["opened in 1911", "Ines Varga", "opened in 1923", "Tom Price"]  # source marks, then the output's

HIGHLIGHTED = """(marks) => marks.map((mark) => {
  const background = getComputedStyle(mark).backgroundColor;
  return background !== "rgba(0, 0, 0, 0)" && background !== "transparent";
})"""


def card(page: Page, judge: str) -> Locator:
    return page.locator(f'[data-role="judge"][data-judge="{judge}"]')


def marks(page: Page) -> Locator:
    return page.locator('#audit-view mark[data-role="quote"]')


def expect_highlighted(page: Page, judge: str, *, lit: bool) -> None:
    """``judge``'s card is the chosen one, the line above the texts names it, and the texts' marks are all
    highlighted (lit) or none is."""
    owner = page.locator('[data-role="quotes-owner"]')
    if lit:
        expect(owner).to_contain_text(f"Highlighted: {judge}'s quotes", use_inner_text=True)
    else:
        expect(owner).to_contain_text(f"Nothing highlighted: {judge} quotes nothing", use_inner_text=True)
    expect(card(page, judge)).to_have_class("judge-panel quotes-lit" if judge != "gpt-explainer" else
                                            "judge-panel shown quotes-lit")
    expect(page.locator('[data-role="judge"].quotes-lit')).to_have_count(1)
    expect(page.locator('#audit-view mark[data-role="quote"][data-lit]')).to_have_count(len(QUOTED) if lit else 0)
    assert marks(page).evaluate_all(HIGHLIGHTED) == [lit] * len(QUOTED), f"highlights while {judge} is chosen"


def test_the_texts_highlight_the_chosen_judges_quotes_and_a_card_that_quotes_nothing_says_so(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    sample, flagged_by = add_output_served_first(project, batch, "harbour", SOURCE, OUTPUT)
    judge_sample(make_run(scene.explainer), sample, score=2, reasoning=QUIET_REASONING)
    judge_sample(make_run(make_judge(project, "second-opinion")), sample, score=1, reasoning=QUOTING_REASONING)
    item = flag(sample, flagged_by)

    page.set_viewport_size({"width": 1366, "height": 768})
    log_in(page, scene.auditor)
    open_audit(page, live_server, project)
    shown(page, item)
    view = page.locator("#audit-view")
    judges = page.locator('[data-role="judge"]')
    expect(judges).to_have_count(3)
    assert judges.evaluate_all("(cards) => cards.map((c) => c.dataset.judge)") == [
        "gpt-explainer", "cheap-first", "second-opinion"
    ]
    expect(marks(page)).to_have_text(QUOTED)
    for index in range(len(QUOTED)):
        expect(marks(page).nth(index)).to_have_attribute("title", "Quoted by second-opinion")

    # The top card quotes nothing: it says so, and nothing in the texts is highlighted.
    top = card(page, "gpt-explainer")
    expect(top.locator('[data-role="quotes-nothing"]')).to_contain_text("Quotes nothing from the texts")
    expect(card(page, "cheap-first").locator('[data-role="quotes-nothing"]')).to_be_visible()
    expect(card(page, "second-opinion").locator('[data-role="quotes-nothing"]')).to_have_count(0)
    expect_highlighted(page, "gpt-explainer", lit=False)

    # j: the next judge's quotes (cheap-first, score only: none), then second-opinion's, its button pressed.
    page.keyboard.press("j")
    expect_highlighted(page, "cheap-first", lit=False)
    page.keyboard.press("j")
    expect_highlighted(page, "second-opinion", lit=True)
    assert page.evaluate("scrollY") == 0, "the page scrolled away from the texts to the chosen card"
    button = card(page, "second-opinion").locator('[data-role="show-quotes"]')
    expect(button).to_have_attribute("aria-pressed", "true")
    expect(button).to_contain_text("Its 4 quoted passages are highlighted in the texts")
    # k goes back; round the list from the top.
    page.keyboard.press("k")
    expect_highlighted(page, "cheap-first", lit=False)
    page.keyboard.press("k")
    page.keyboard.press("k")
    expect_highlighted(page, "second-opinion", lit=True)

    # A click on a card chooses it; the card's button does too.
    top.locator("h3").click()
    expect_highlighted(page, "gpt-explainer", lit=False)
    expect(button).to_have_attribute("aria-pressed", "false")
    expect(button).to_contain_text("Highlight its 4 quoted passages")
    button.click()
    expect_highlighted(page, "second-opinion", lit=True)

    # The same item shown again (blind mode switched: its judges were seen already) keeps the judge chosen.
    page.keyboard.press("b")
    expect(view).to_have_attribute("data-blind", "on")
    expect_highlighted(page, "second-opinion", lit=True)
