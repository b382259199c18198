"""The pair labeling page when its login session changes under it (config/session_guard.py, static/annotate/http.js):
logged out, logged in again as the same judge in another tab, another user logged in, a CSRF token refused. None of
these says the judge may not label: the item stays on screen, unanswered, the status says the answer was not saved
(never a green "Saved") and what to do, and the same key saves it once the session is right. Only the queue's own
refusals (a role that does not judge, a block) end the page with "You cannot label in this project"."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.sessions.models import Session
from playwright.sync_api import Page, expect

from annotate.models import Membership, PairItem, PairJudgement
from tests.e2e.test_pairs_labeling import judgement, open_labeling, pairs_project, shown_item, text_items

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

__all__ = ["pairs_project", "text_items"]  # fixtures, imported for this module's tests


def answered_by(user: Any) -> list[tuple[int, str]]:
    return sorted(PairJudgement.objects.filter(judge=user).exclude(label="").values_list("item_id", "label"))


def expect_item_kept_and_not_saved(page: Page, item: PairItem, failure: str) -> None:
    """The item is still on screen, the refusal panel is not, and the status is red with ``failure``, in full."""
    shown_item(page, item)
    expect(page.locator('[data-role="item"]')).to_be_visible()
    expect(page.locator('[data-role="no-more-items"]')).to_be_hidden()
    expect(page.get_by_text("You cannot label in this project")).to_have_count(0)
    status = page.locator('[data-role="save-status"]')
    expect(status).to_have_attribute("data-state", "failed")
    expect(status).to_contain_text(failure)
    assert status.evaluate("e => e.scrollWidth <= e.clientWidth"), "the status is cut short: its words do not fit"


def test_logged_out_then_logged_in_again_as_the_same_judge_in_another_tab_the_next_answer_saves(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, swap = text_items
    log_in(page, alice)
    open_labeling(page, live_server, date.project)
    shown_item(page, date)
    page.keyboard.press("h")
    shown_item(page, name)

    Session.objects.all().delete()  # the session ends (expired, or a logout elsewhere)
    page.keyboard.press("n")

    expect_item_kept_and_not_saved(page, name, "not saved (logged out)")
    banner = page.locator('[data-role="session-banner"]')
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("Log in again in another tab, then answer again")
    expect(banner).not_to_contain_text("Retry")  # this page has no Retry button: the judge answers again
    assert answered_by(alice) == [(date.pk, "H")]

    second_tab = page.context.new_page()
    log_in(second_tab, alice)  # a new session, and a new CSRF token in the cookie
    second_tab.close()
    page.keyboard.press("n")

    shown_item(page, swap)
    assert judgement(name, alice).label == "N"
    expect(page.locator('[data-role="save-status"]')).to_have_attribute("data-state", "saved")
    expect(banner).to_be_hidden()


def test_an_answer_after_another_user_logged_in_keeps_the_item_and_saves_nothing(
    page: Page, live_server: Any, log_in: Any, alice: Any, bob: Any, text_items: list[PairItem]
) -> None:
    date, name, _ = text_items
    log_in(page, alice)
    open_labeling(page, live_server, date.project)
    shown_item(page, date)
    second_tab = page.context.new_page()
    log_in(second_tab, bob)  # a colleague logs in on the same browser

    page.keyboard.press("n")

    expect_item_kept_and_not_saved(page, date, "another user logged in")
    expect(page.locator('[data-role="session-banner"]')).to_contain_text("opened as alice")
    assert answered_by(alice) == [] and answered_by(bob) == []

    log_in(second_tab, alice)  # back to the page's judge: the same key now saves
    page.keyboard.press("n")
    shown_item(page, name)
    assert judgement(date, alice).label == "N"
    assert answered_by(bob) == []


def test_an_answer_whose_csrf_token_is_refused_keeps_the_item_and_a_reload_lets_it_save(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, _ = text_items
    log_in(page, alice)
    open_labeling(page, live_server, date.project)
    shown_item(page, date)
    # Without its CSRF cookie the browser sends the token printed in the page, which the server cannot check: DRF
    # refuses with 403 "CSRF Failed: CSRF cookie not set."
    page.context.clear_cookies(name="csrftoken")

    page.keyboard.press("h")

    expect_item_kept_and_not_saved(page, date, "reload the page")
    expect(page.locator('[data-role="notice"]')).to_contain_text("Reload the page")
    expect(page.locator('[data-role="notice"]')).not_to_contain_text("CSRF")
    assert answered_by(alice) == []

    open_labeling(page, live_server, date.project)  # the reload sets the cookie again
    shown_item(page, date)
    page.keyboard.press("h")
    shown_item(page, name)
    assert judgement(date, alice).label == "H"


def test_a_role_that_no_longer_judges_still_ends_the_page_with_the_refusal(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date = text_items[0]
    log_in(page, alice)
    open_labeling(page, live_server, date.project)
    shown_item(page, date)
    Membership.objects.filter(project=date.project, user=alice).update(role=Membership.Role.AUDITOR)

    page.keyboard.press("h")

    end = page.locator('[data-role="no-more-items"]')
    expect(end.locator('[data-role="end-title"]')).to_have_text("You cannot label in this project")
    expect(end.locator('[data-role="end-reason"]')).to_contain_text("annotators and admins")
    expect(page.locator('[data-role="item"]')).to_be_hidden()
    expect(page.locator('[data-role="save-status"]')).to_have_attribute("data-state", "failed")
    expect(page.locator('[data-role="session-banner"]')).to_be_hidden()
    assert answered_by(alice) == []
