"""The span page's sentence keys on a Mac: macOS takes Ctrl+Up/Down (Mission Control, App Exposé) before the browser
sees them, so the caret's move by sentence has a second binding, Option+Shift+Up/Down (Alt+Shift on every system),
which clashes with nothing the page has (Alt+Up/Down choose a span, Shift+Up/Down extend by a line). The key help and
the page's notices name it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Sample, SpanAnnotation
from tests.e2e.annotation_helpers import CARET, MAC_AGENT, eventually, make_span, open_sample
from tests.e2e.test_span_keyboard import split_source

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def mac_page(new_page: Callable[..., Page]) -> Page:
    """A page whose browser says it runs on macOS."""
    return new_page(user_agent=MAC_AGENT)


def test_on_a_mac_option_shift_arrows_move_the_caret_by_sentence_and_link_it(
    mac_page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    # "Lintown's Harbour Bridge reopened on Tuesday after nine weeks of repairs. The 12.4 million euro project ..."
    page = mac_page
    sentences = split_source(sample)
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)
    assert page.evaluate("() => navigator.userAgentData && navigator.userAgentData.platform") == "macOS"
    page.keyboard.press("Alt+ArrowDown")
    expect(page.locator(f'[data-span-id="{span.pk}"]')).to_have_attribute("aria-current", "true")

    # In the summary: to the next sentence's start and back, the caret bare (nothing selected), the span still chosen.
    page.focus('[data-role="summary"]')
    page.keyboard.press("Alt+Shift+ArrowDown")
    assert page.evaluate(CARET) == sample.summary.index("The 12.4")
    assert page.evaluate("window.getSelection().isCollapsed") is True
    page.keyboard.press("Alt+Shift+ArrowUp")
    assert page.evaluate(CARET) == 0
    expect(page.locator(f'[data-span-id="{span.pk}"]')).to_have_attribute("aria-current", "true")

    # L with the caret in no sentence names the Mac's keys.
    page.keyboard.press("l")
    expect(page.locator('[data-role="notice"]')).to_contain_text("Option+Shift+↓ / Option+Shift+↑ between sentences")

    # In the source: the third sentence, linked by L.
    page.focus('[data-role="source"]')
    page.keyboard.press("Alt+Shift+ArrowDown")
    page.keyboard.press("Alt+Shift+ArrowDown")
    page.keyboard.press("l")
    start, end = sentences[2]
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).source_start == start)
    assert SpanAnnotation.objects.get(pk=span.pk).source_end == end

    page.keyboard.press("?")
    expect(page.locator('[data-role="shortcuts"]')).to_contain_text("on a Mac Option+Shift+↑↓")


def test_alt_shift_arrows_move_by_sentence_on_every_system_and_the_other_arrow_keys_keep_their_meaning(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.focus('[data-role="summary"]')
    page.keyboard.press("Alt+Shift+ArrowDown")
    assert page.evaluate(CARET) == sample.summary.index("The 12.4")
    page.keyboard.press("Control+ArrowUp")  # Ctrl+Up/Down as before
    assert page.evaluate(CARET) == 0

    verdicts = page.evaluate(
        """async () => {
          const { movesBySentence } = await import('/static/annotate/caret.js');
          const key = (key, mods) => ({ key, ctrlKey: false, altKey: false, shiftKey: false, metaKey: false, ...mods });
          return [
            ['Ctrl+Down', key('ArrowDown', { ctrlKey: true })],
            ['Ctrl+Up', key('ArrowUp', { ctrlKey: true })],
            ['Alt+Shift+Down', key('ArrowDown', { altKey: true, shiftKey: true })],
            ['Alt+Shift+Up', key('ArrowUp', { altKey: true, shiftKey: true })],
            ['Alt+Down (a span)', key('ArrowDown', { altKey: true })],
            ['Shift+Down (a line)', key('ArrowDown', { shiftKey: true })],
            ['Ctrl+Shift+Down (a line)', key('ArrowDown', { ctrlKey: true, shiftKey: true })],
            ['Ctrl+Alt+Down', key('ArrowDown', { ctrlKey: true, altKey: true })],
            ['Cmd+Alt+Shift+Down', key('ArrowDown', { metaKey: true, altKey: true, shiftKey: true })],
            ['Alt+Shift+Right', key('ArrowRight', { altKey: true, shiftKey: true })],
            ['Down', key('ArrowDown', {})],
          ].map(([name, event]) => [name, movesBySentence(event)]);
        }"""
    )
    assert dict(verdicts) == {
        "Ctrl+Down": True,
        "Ctrl+Up": True,
        "Alt+Shift+Down": True,
        "Alt+Shift+Up": True,
        "Alt+Down (a span)": False,
        "Shift+Down (a line)": False,
        "Ctrl+Shift+Down (a line)": False,
        "Ctrl+Alt+Down": False,
        "Cmd+Alt+Shift+Down": False,
        "Alt+Shift+Right": False,
        "Down": False,
    }
