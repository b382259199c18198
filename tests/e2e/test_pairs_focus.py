"""The pair labeling page after a click on an answer: Enter or Space never answers the next item, unread, with the
clicked answer (the focused button would take the key as another click); the answer keys keep working."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import PairItem, PairJudgement
from tests.e2e.test_pairs_labeling import judgement, open_labeling, pairs_project, shown_item, text_items

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

__all__ = ["pairs_project", "text_items"]  # fixtures, imported for this module's tests


@pytest.mark.parametrize("key", ["Enter", " "])
def test_enter_or_space_after_clicking_an_answer_does_not_answer_the_next_item(
    page: Page, live_server: Any, log_in: Any, bob: Any, text_items: list[PairItem], key: str
) -> None:
    date, name, swap = text_items
    log_in(page, bob)
    open_labeling(page, live_server, date.project)
    shown_item(page, date)

    page.click('[data-label="N"]')
    shown_item(page, name)
    expect(page.locator('[data-role="answered"]')).to_have_text("1")

    page.keyboard.press(key)
    page.wait_for_timeout(600)  # long enough for an answer's round trip on this server

    shown_item(page, name)
    expect(page.locator('[data-role="answered"]')).to_have_text("1")
    assert not PairJudgement.objects.filter(item=name, judge=bob).exclude(label="").exists()

    # The answer keys still answer the item on screen, once.
    page.keyboard.press("h")
    shown_item(page, swap)
    assert judgement(name, bob).label == "H"
    assert judgement(date, bob).label == "N"
