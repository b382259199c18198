"""The labeling page's "Nothing left for you" looks for new work by itself: an item that split after the judge
finished shows without a click and without a reload (the focus stays in the page), with a notice; no checks while
the tab is hidden. A blocked judge's page keeps no "Saved" and no Undo."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import OperationalError
from django.utils import timezone
from playwright.sync_api import Page, expect

from annotate.models import BlockedJudge, PairConfig, PairItem, PairJudgement, Project
from annotate.services.pairs import queue
from tests.conftest import make_user
from tests.e2e.annotation_helpers import eventually
from tests.e2e.test_pairs_labeling import SWAPS, make_text_items, open_labeling, shown_item
from tests.pairs import conftest as pairs_fixtures

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

pairs_project = pairs_fixtures.pairs_project

NEW_ITEM_NOTICE = "A new item needs your answer"


def retried(write: Callable[[], Any]) -> None:
    """A write from the test's thread, tried again while the live server's thread holds SQLite's lock (a check)."""
    assert eventually(lambda: _attempt(write))


def _attempt(write: Callable[[], Any]) -> bool:
    try:
        write()
    except OperationalError as error:
        if "locked" not in str(error):
            raise
        return False
    return True


@pytest.fixture
def split_waiting(pairs_project: Project, bob: Any) -> tuple[PairItem, PairItem, Any]:
    """Two items, two judges each: alice may answer the first; the second is taken by bob (H) and by carl, who has
    it on screen. When carl answers N the item splits and needs two more judges, alice among them."""
    PairConfig.objects.filter(project=pairs_project).update(judges_per_item=2, max_judges_per_item=4)
    first, second = make_text_items(pairs_project, swaps=SWAPS[:2])
    carl = make_user("carl")
    pairs_project.memberships.create(user=carl, role="annotator")
    now = timezone.now()
    PairJudgement.objects.create(item=second, judge=bob, round=second.round, label="H",
                                 served_at=now - timezone.timedelta(seconds=30), answered_at=now, seconds=30)
    PairJudgement.objects.create(item=second, judge=carl, round=second.round, served_at=now)
    PairItem.objects.filter(pk__in=[first.pk, second.pk]).update(judges_needed=2)
    PairItem.objects.filter(pk=second.pk).update(taken=2, votes_h=1)
    return first, second, carl


def finish(page: Page, live_server: Any, log_in: Any, alice: Any, first: PairItem) -> None:
    log_in(page, alice)
    open_labeling(page, live_server, first.project)
    shown_item(page, first)
    page.keyboard.press("h")
    end = page.locator('[data-role="no-more-items"]')
    expect(end).to_contain_text("Nothing left for you")
    expect(page.locator('[data-role="left"]')).to_have_text("0")


def test_an_item_that_splits_after_the_judge_finished_shows_by_itself_without_a_reload(
    page: Page, live_server: Any, log_in: Any, alice: Any, settings: Any,
    split_waiting: tuple[PairItem, PairItem, Any],
) -> None:
    settings.PAIRS_LABEL_CHECK_MS = 300
    first, second, carl = split_waiting
    finish(page, live_server, log_in, alice, first)
    page.evaluate("() => { window.__sameDocument = true; }")
    page.locator('[data-role="check-again"]').focus()

    retried(lambda: queue.record_judgement(first.project, carl, second.pk, "N"))
    assert PairItem.objects.get(pk=second.pk).judges_needed == 4  # split: two more judges wanted

    shown_item(page, second)  # no click: the page asked by itself
    expect(page.locator('[data-role="notice"]')).to_contain_text(NEW_ITEM_NOTICE)
    expect(page.locator('[data-role="left"]')).to_have_text("1")
    assert page.evaluate("() => window.__sameDocument") is True  # not reloaded
    # The focus went from the hidden "Check again" to the item, not to the page's body: keys and Tab go on from it.
    assert page.evaluate("() => document.activeElement.dataset.role") == "item"
    page.keyboard.press("n")
    expect(page.locator('[data-role="no-more-items"]')).to_be_visible()
    assert eventually(lambda: PairJudgement.objects.filter(item=second, judge=alice, label="N").exists())


def test_no_check_while_the_tab_is_hidden_and_one_at_once_when_it_shows_again(
    page: Page, live_server: Any, log_in: Any, alice: Any, settings: Any,
    split_waiting: tuple[PairItem, PairItem, Any],
) -> None:
    settings.PAIRS_LABEL_CHECK_MS = 300
    first, second, carl = split_waiting
    finish(page, live_server, log_in, alice, first)
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url) if "/api/pairs/next/" in request.url else None)
    page.evaluate("""() => {
      Object.defineProperty(document, "hidden", { configurable: true, get: () => window.__hidden === true });
      window.__hidden = true;
      document.dispatchEvent(new Event("visibilitychange"));
    }""")
    retried(lambda: queue.record_judgement(first.project, carl, second.pk, "N"))
    page.wait_for_timeout(1500)  # five intervals: a page that kept checking would have asked, and been served
    assert asked == []
    assert not PairJudgement.objects.filter(item=second, judge=alice).exists()
    expect(page.locator('[data-role="no-more-items"]')).to_be_visible()

    page.evaluate("""() => { window.__hidden = false; document.dispatchEvent(new Event("visibilitychange")); }""")
    shown_item(page, second)
    expect(page.locator('[data-role="notice"]')).to_contain_text(NEW_ITEM_NOTICE)


def test_a_blocked_judges_page_shows_no_saved_and_no_undo_but_the_reason_and_whom_to_ask(
    page: Page, live_server: Any, log_in: Any, alice: Any, admin_user: Any, pairs_project: Project
) -> None:
    (item,) = make_text_items(pairs_project, swaps=SWAPS[:1])
    BlockedJudge.objects.create(project=pairs_project, judge=alice, blocked_by=admin_user, reason="always H, in 2 s")
    log_in(page, alice)
    open_labeling(page, live_server, pairs_project)
    end = page.locator('[data-role="no-more-items"]')
    expect(end.locator('[data-role="end-title"]')).to_have_text("You are blocked in this project")
    expect(end.locator('[data-role="block-reason"]')).to_have_text("always H, in 2 s")
    expect(end.locator('[data-role="admins"]')).to_have_text("adam")
    expect(page.locator('[data-role="save-status"]')).to_be_hidden()
    expect(page.locator('[data-role="undo"]')).to_be_hidden()
    page.locator('[data-role="check-again"]').click()  # refused again: still nothing of the kind
    expect(end.locator('[data-role="end-title"]')).to_have_text("You are blocked in this project")
    expect(page.locator('[data-role="save-status"]')).to_be_hidden()
    expect(page.locator('[data-role="undo"]')).to_be_hidden()
    assert not PairJudgement.objects.filter(item=item).exists()


def test_a_judge_blocked_while_answering_loses_the_undo_and_is_told_the_answer_was_not_saved(
    page: Page, live_server: Any, log_in: Any, alice: Any, admin_user: Any, pairs_project: Project
) -> None:
    first, second = make_text_items(pairs_project, swaps=SWAPS[:2])
    log_in(page, alice)
    open_labeling(page, live_server, pairs_project)
    shown_item(page, first)
    page.keyboard.press("h")
    shown_item(page, second)
    expect(page.locator('[data-role="undo"]')).to_be_enabled()
    retried(lambda: BlockedJudge.objects.create(project=pairs_project, judge=alice, blocked_by=admin_user))
    page.keyboard.press("n")

    end = page.locator('[data-role="no-more-items"]')
    expect(end.locator('[data-role="end-title"]')).to_have_text("You are blocked in this project")
    expect(page.locator('[data-role="undo"]')).to_be_hidden()
    expect(page.locator('[data-role="save-status"]')).to_have_text("Failed: your answer was not saved")
