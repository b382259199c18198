"""The pair labeling page open in two tabs of one judge: an undo names the answer the server took back, which may be
the other tab's, and an answer a stale tab sends is refused in the page's own words (no item numbers, no API
addresses: those are the API's words, for scripts)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import PairItem, PairJudgement, PairRound
from tests.e2e.test_pairs_labeling import judgement, open_labeling, pairs_project, shown_item, text_items

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

__all__ = ["pairs_project", "text_items"]  # fixtures, imported for this module's tests

API_WORDS = re.compile(r"/api/|\bitem \d+|\?project=")


def test_undo_in_one_tab_after_the_other_tab_answered_names_the_answer_taken_back(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, swap = text_items
    log_in(page, alice)
    open_labeling(page, live_server, date.project)
    shown_item(page, date)
    page.keyboard.press("h")  # tab A: "hallucination" on 1923
    shown_item(page, name)

    tab_b = page.context.new_page()
    open_labeling(tab_b, live_server, date.project)
    shown_item(tab_b, name)  # the item served to alice, in both tabs
    tab_b.keyboard.press("n")  # tab B: "not hallucination" on Tom Price, now alice's last answer
    shown_item(tab_b, swap)

    page.keyboard.press("u")

    shown_item(page, name)
    expect(page.locator('[data-role="notice"]')).to_have_text(
        'Your answer "not hallucination" on "Tom Price" was taken back: answer again.'
    )
    assert (judgement(name, alice).label, judgement(date, alice).label) == ("", "H")


def test_an_answer_from_a_stale_tab_is_refused_in_the_pages_own_words(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, _ = text_items
    log_in(page, alice)
    open_labeling(page, live_server, date.project)
    tab_b = page.context.new_page()
    open_labeling(tab_b, live_server, date.project)
    shown_item(page, date)
    shown_item(tab_b, date)
    page.keyboard.press("h")  # answered in tab A; tab B still shows it
    shown_item(page, name)

    tab_b.keyboard.press("n")

    notice = tab_b.locator('[data-role="notice"]')
    expect(notice).to_have_text(
        "Not saved: you had already answered this item, in another tab or window (to change that answer, press u "
        "while it is your last one). Here is your next item."
    )
    assert not API_WORDS.search(notice.text_content() or "")
    shown_item(tab_b, name)
    assert judgement(date, alice).label == "H"


def test_undo_of_an_answer_in_a_closed_round_says_why_without_the_apis_words(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, _ = text_items
    log_in(page, alice)
    open_labeling(page, live_server, date.project)
    shown_item(page, date)
    page.keyboard.press("n")
    shown_item(page, name)
    # The admin starts the next round: round 1's answers are final.
    PairRound.objects.filter(project=date.project, number=1).update(status=PairRound.Status.CLOSED)

    page.keyboard.press("u")

    notice = page.locator('[data-role="notice"]')
    expect(notice).to_contain_text("Nothing to undo:")
    expect(notice).to_contain_text("final")
    assert not API_WORDS.search(notice.text_content() or "")
    assert PairJudgement.objects.get(item=date, judge=alice).label == "N"
