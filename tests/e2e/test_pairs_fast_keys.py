"""The pair labeling page never answers an item unread: an answer key pressed twice in quick succession, a key held
down (auto-repeat), or a click in the first moment a new item is on screen answers only the item before it; once the
item has settled (the page's data-answerable), one press answers it. The undo notice ("taken back: answer again")
goes as soon as the new answer is saved."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, Request, expect

from annotate.models import PairItem, PairJudgement
from tests.e2e.test_pairs_labeling import (
    judgement,
    open_labeling,
    pairs_project,
    shown_item,
    text_items,
    wait_until_answerable,
)

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

__all__ = ["pairs_project", "text_items"]  # fixtures, imported for this module's tests

# Every answer key the page receives, with the item on screen and whether the page took answers at that moment:
# evidence that a press below really came while the next item was unsettled, and not before it arrived.
LOG_ANSWER_KEYS = """() => {
  window.__answerKeys = [];
  document.addEventListener('keydown', (event) => {
    if (!['h', 'n', '?'].includes(event.key)) return;
    const root = document.getElementById('pair-labeler');
    window.__answerKeys.push({key: event.key, repeat: event.repeat, item: root.dataset.itemId,
                              answerable: root.dataset.answerable});
  }, {capture: true});
}"""

# Click an answer button the moment the next item is put on the page (well inside its settle time); window.__clicked
# says how the page stood then. The click is the button's own (element.click()), the handler a mouse click reaches.
CLICK_WHEN_THE_ITEM_CHANGES = """([from, label]) => { window.__clicked = new Promise((resolve) => {
  const root = document.getElementById('pair-labeler');
  const observer = new MutationObserver(() => {
    if (!root.dataset.itemId || root.dataset.itemId === from) return;
    observer.disconnect();
    const button = root.querySelector(`[data-label="${label}"]`);
    const seen = {item: root.dataset.itemId, answerable: root.dataset.answerable,
                  opacity: Number(getComputedStyle(button).opacity)};
    button.click();
    resolve(seen);
  });
  observer.observe(root, {attributes: true, attributeFilter: ['data-item-id']});
}); }"""


def record_answer_posts(page: Page) -> list[str]:
    """The URLs of the answers the page sends (POSTs to an item's judgements), filled in as they go out."""
    posts: list[str] = []

    def note(request: Request) -> None:
        if request.method == "POST" and "/judgements/" in request.url:
            posts.append(request.url)

    page.on("request", note)
    return posts


def answers_by(judge: Any) -> list[tuple[int, str]]:
    return sorted(PairJudgement.objects.filter(judge=judge).exclude(label="").values_list("item_id", "label"))


def start(page: Page, live_server: Any, log_in: Any, judge: Any, items: list[PairItem]) -> list[str]:
    log_in(page, judge)
    open_labeling(page, live_server, items[0].project)
    shown_item(page, items[0])
    page.evaluate(LOG_ANSWER_KEYS)
    return record_answer_posts(page)


def test_a_double_press_150_ms_apart_saves_one_answer_and_leaves_the_next_item_unanswered(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, _ = text_items
    posts = start(page, live_server, log_in, alice, text_items)

    page.keyboard.press("h")
    page.wait_for_timeout(150)  # the judge's second press, as measured in the keyboard session
    shown_item(page, name, answerable=False)  # the answer's reply brought the next item (at once on this server)
    page.keyboard.press("h")

    shown_item(page, name)  # settled, and still the same item: the second press answered nothing
    assert len(posts) == 1
    assert answers_by(alice) == [(date.pk, "H")]
    second = page.evaluate("() => window.__answerKeys")[1]
    assert second == {"key": "h", "repeat": False, "item": str(name.pk), "answerable": "false"}, (
        "the second press did not come while the next item was settling; the test proved nothing")

    # A press once the item has settled answers it, once.
    page.keyboard.press("n")
    shown_item(page, text_items[2])
    assert judgement(name, alice).label == "N"
    assert len(posts) == 2


def test_a_held_answer_key_saves_one_answer(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, _ = text_items
    posts = start(page, live_server, log_in, alice, text_items)

    page.keyboard.down("n")
    shown_item(page, name)  # the next item has settled while the key is still down
    for _ in range(3):
        page.keyboard.down("n")  # the keyboard's auto-repeat: keydown again, with event.repeat set
    page.keyboard.up("n")

    shown_item(page, name)
    assert len(posts) == 1
    assert answers_by(alice) == [(date.pk, "N")]
    keys = page.evaluate("() => window.__answerKeys")
    assert [key["repeat"] for key in keys] == [False, True, True, True]
    # Pressed while the item took answers: only event.repeat kept them from answering it.
    assert all(key["answerable"] == "true" for key in keys[1:]), "the repeats came before the item settled"


def test_a_click_while_the_next_item_settles_does_nothing_and_the_dimmed_answers_say_so(
    page: Page, live_server: Any, log_in: Any, bob: Any, text_items: list[PairItem]
) -> None:
    date, name, swap = text_items
    posts = start(page, live_server, log_in, bob, text_items)
    answer_n = page.locator('[data-label="N"]')
    expect(answer_n).to_have_css("opacity", "1")

    page.evaluate(CLICK_WHEN_THE_ITEM_CHANGES, [str(date.pk), "H"])
    page.click('[data-label="N"]')

    clicked = page.evaluate("() => window.__clicked")
    assert clicked["item"] == str(name.pk)
    assert clicked["answerable"] == "false"
    assert clicked["opacity"] < 1  # dimmed while the item settles
    shown_item(page, name)
    expect(answer_n).to_have_css("opacity", "1")  # back in full once it takes answers
    assert len(posts) == 1
    assert answers_by(bob) == [(date.pk, "N")]

    page.click('[data-label="H"]')  # a click once settled answers the item
    shown_item(page, swap)
    assert judgement(name, bob).label == "H"


def test_the_undo_notice_goes_once_the_item_is_answered_again(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, _ = text_items
    start(page, live_server, log_in, alice, text_items)
    page.keyboard.press("n")
    shown_item(page, name, answerable=False)

    page.keyboard.press("u")  # at once: undo does not wait for the item to settle
    shown_item(page, date, answerable=False)
    notice = page.locator('[data-role="notice"]')
    expect(notice).to_contain_text("was taken back: answer again")
    wait_until_answerable(page)
    expect(notice).to_be_visible()  # it stays while the item it asks about is on screen

    page.keyboard.press("h")
    shown_item(page, name, answerable=False)
    # Checked at once, not waited for: the notice went with the item, not on its own timer seconds later.
    assert notice.is_hidden()
    assert judgement(date, alice).label == "H"


# Press an answer key the moment the next item is put on the page (well inside its settle time), as a judge mashing
# keys does; window.__pressed says how the page stood then. Dispatched from the page so the press is sure to come
# before the item settles, however slow the machine running the test.
PRESS_WHEN_THE_ITEM_CHANGES = """([from, key]) => { window.__pressed = new Promise((resolve) => {
  const root = document.getElementById('pair-labeler');
  const observer = new MutationObserver(() => {
    if (!root.dataset.itemId || root.dataset.itemId === from) return;
    observer.disconnect();
    const seen = {item: root.dataset.itemId, answerable: root.dataset.answerable};
    document.body.dispatchEvent(new KeyboardEvent('keydown', {key, bubbles: true, cancelable: true}));
    resolve(seen);
  });
  observer.observe(root, {attributes: true, attributeFilter: ['data-item-id']});
}); }"""


def test_a_press_before_the_item_settles_is_ignored_and_the_page_says_so(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, swap = text_items
    posts = start(page, live_server, log_in, alice, text_items)
    too_fast = page.locator('[data-role="too-fast"]')
    expect(too_fast).to_be_hidden()

    page.evaluate(PRESS_WHEN_THE_ITEM_CHANGES, [str(date.pk), "n"])
    page.keyboard.press("h")

    assert page.evaluate("() => window.__pressed") == {"item": str(name.pk), "answerable": "false"}
    expect(too_fast).to_be_visible()
    expect(too_fast).to_contain_text("Too fast")
    shown_item(page, name)  # settled, still unanswered: the press was dropped
    assert len(posts) == 1
    assert answers_by(alice) == [(date.pk, "H")]

    expect(too_fast).to_be_hidden()  # it goes by itself
    page.keyboard.press("n")  # a press once settled answers the item, with no cue
    shown_item(page, swap, answerable=False)
    expect(too_fast).to_be_hidden()
    assert judgement(name, alice).label == "N"
