"""The pair labeling page when the connection drops after the server recorded an answer: http.js sends the answer
again, the API answers 200 with the recorded answer (a retry, nothing new recorded), and the page moves on to the
next item as after a 201, with no "Not saved" warning."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, Route, expect

from annotate.models import PairItem, PairJudgement
from tests.e2e.test_pairs_labeling import judgement, open_labeling, pairs_project, shown_item, text_items

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

__all__ = ["pairs_project", "text_items"]  # fixtures, imported for this module's tests


def lose_the_first_answers_reply(page: Page) -> list[int]:
    """Let the first answer reach the server, then drop the connection before its reply reaches the page; later
    answers go through untouched. Returns the statuses the server gave, in order."""
    statuses: list[int] = []

    def handle(route: Route) -> None:
        if route.request.method != "POST":
            route.continue_()
            return
        if not statuses:
            statuses.append(route.fetch().status)  # recorded on the server
            route.abort("connectionreset")  # ... and the reply lost on the way
            return
        reply = route.fetch()
        statuses.append(reply.status)
        route.fulfill(response=reply)

    page.route("**/judgements/", handle)
    return statuses


def test_an_answer_whose_reply_was_lost_is_retried_and_the_page_moves_on(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, _ = text_items
    log_in(page, alice)
    open_labeling(page, live_server, date.project)
    shown_item(page, date)
    statuses = lose_the_first_answers_reply(page)

    page.keyboard.press("h")

    shown_item(page, name)
    assert statuses == [201, 200]  # recorded once, then the retry told the page so
    expect(page.locator('[data-role="notice"]')).not_to_contain_text("Not saved")
    assert judgement(date, alice).label == "H"
    assert PairJudgement.objects.filter(judge=alice).exclude(label="").count() == 1
    # The page counts the answer as its own: undo takes it back.
    page.keyboard.press("u")
    shown_item(page, date)
    expect(page.locator('[data-role="notice"]')).to_contain_text("was taken back")
