"""The span annotation page's "Keyboard shortcuts" overlay is a modal dialog for the keyboard too: opening it
moves the focus inside, Tab and Shift+Tab stay inside while it is open, and Esc or Close gives the focus (and
the words selected before) back, so the annotator's keys carry on where they were."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Sample
from tests.e2e.annotation_helpers import eventually, open_sample, saved_spans, select_words

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DIALOG = '[data-role="shortcuts"]'
FOCUS_IN_DIALOG = f"document.querySelector('{DIALOG}').contains(document.activeElement)"
FOCUSED_ROLE = "document.activeElement.dataset.role || document.activeElement.tagName"


def test_question_mark_moves_the_focus_into_the_dialog_and_tab_stays_there(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.focus('[data-role="summary"]')
    select_words(page, "summary", sample.summary, "nine weeks")

    page.keyboard.press("?")

    expect(page.locator(DIALOG)).to_be_visible()
    expect(page.locator('[data-role="close-shortcuts"]')).to_be_focused()
    for key in ["Tab", "Tab", "Shift+Tab", "Shift+Tab", "Shift+Tab"]:
        page.keyboard.press(key)
        assert page.evaluate(FOCUS_IN_DIALOG), f"after {key} the focus is on {page.evaluate(FOCUSED_ROLE)}"

    page.keyboard.press("Escape")

    expect(page.locator(DIALOG)).to_be_hidden()
    assert page.evaluate(FOCUSED_ROLE) == "summary"  # back where it was before ?
    # The annotator's keys work at once, on the words selected before the dialog.
    page.keyboard.press("1")
    spans = eventually(lambda: saved_spans(sample, alice))
    assert [span.text for span in spans] == ["nine weeks"]


def test_the_help_button_opens_the_dialog_and_close_gives_the_focus_back_to_it(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    help_button = page.locator('[data-role="help"]')
    help_button.focus()

    page.keyboard.press("Enter")

    expect(page.locator(DIALOG)).to_be_visible()
    expect(page.locator('[data-role="close-shortcuts"]')).to_be_focused()
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUS_IN_DIALOG), f"after Tab the focus is on {page.evaluate(FOCUSED_ROLE)}"

    page.keyboard.press("Enter")  # on Close

    expect(page.locator(DIALOG)).to_be_hidden()
    expect(help_button).to_be_focused()
    # ? opens it again from there, and ? closes it too.
    page.keyboard.press("?")
    expect(page.locator('[data-role="close-shortcuts"]')).to_be_focused()
    page.keyboard.press("?")
    expect(page.locator(DIALOG)).to_be_hidden()
    expect(help_button).to_be_focused()


@pytest.mark.parametrize("where", ["close-button", "backdrop"])
def test_closing_the_dialog_with_the_mouse_keeps_the_selected_words(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample, where: str
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    select_words(page, "summary", sample.summary, "nine weeks")
    page.keyboard.press("?")
    expect(page.locator('[data-role="close-shortcuts"]')).to_be_focused()

    if where == "close-button":
        page.locator('[data-role="close-shortcuts"]').click()
    else:
        page.mouse.click(5, 5)  # the dimmed page around the card

    expect(page.locator(DIALOG)).to_be_hidden()
    expect(page.locator('[data-role="summary"]')).to_be_focused()  # it had the focus before ? (from the start)
    page.keyboard.press("1")
    spans = eventually(lambda: saved_spans(sample, alice))
    assert [span.text for span in spans] == ["nine weeks"]
