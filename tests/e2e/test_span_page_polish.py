"""Three gaps on the span page: in round 2 the other annotators' spans could not be reached by keyboard; with no
span yet a blank gap of about 70 px sat under the "Spans" heading; and on a Mac, where Option+Left/Right move by
word, only Ctrl did so."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Sample, SpanAnnotation
from annotate.services import rounds, spans
from tests.e2e.annotation_helpers import CARET, MAC_AGENT, make_span, open_sample, select_words, tab_until

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1366, "height": 768}
OTHERS = '[data-role="others-list"] [data-other-index]'
SHOWN = '[data-role="summary"] .seg.preview'
FOCUSED_OTHER = "document.activeElement && document.activeElement.dataset.otherIndex || null"


def open_round_two(batch: Any, alice: Any, bob: Any) -> None:
    """Both annotators submit round 1 of the batch and round 2 opens (alice's spans are copied into it)."""
    for person in (alice, bob):
        for each in batch.samples.all():
            spans.mark_sample_done(each, person, round=1, done=True)
    rounds.open_reconciliation_round(batch, reveal_names=False)


def spans_as_stored() -> list[tuple[Any, ...]]:
    return list(SpanAnnotation.objects.order_by("pk").values_list("pk", "annotator", "round", "labels", "version"))


# ---------- round 2: the other annotators' spans by keyboard ----------


def test_the_other_annotators_spans_are_reached_stepped_through_and_shown_by_keyboard_alone(
    page: Page, live_server: Any, log_in: Any, alice: Any, bob: Any, batch: Any, sample: Sample
) -> None:
    make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    make_span(sample, bob, "Tuesday", ["Benign"])
    make_span(sample, bob, "national government", ["Unwanted", "Unwanted.Extrinsic"])
    open_round_two(batch, alice, bob)
    before = spans_as_stored()
    page.set_viewport_size(LAPTOP)
    log_in(page, alice)
    open_sample(page, live_server, sample)
    others = page.locator(OTHERS)
    expect(others).to_have_count(2)
    expect(others.locator(".span-text")).to_have_text(["Tuesday", "national government"])

    page.focus('[data-role="summary"]')
    tab_until(page, f'{OTHERS}[data-other-index="0"]')
    ring = page.evaluate(
        "() => { const s = getComputedStyle(document.activeElement); return [s.outlineStyle, s.outlineWidth]; }"
    )
    assert ring == ["solid", "2px"], ring  # the focus shows
    expect(page.locator(SHOWN)).to_have_count(0)

    page.keyboard.press("Enter")
    expect(page.locator(SHOWN)).to_have_text("Tuesday")
    expect(others.nth(0)).to_have_attribute("aria-current", "true")
    expect(others.nth(0)).to_be_focused()  # the list is drawn anew: the focus stays on the item

    page.keyboard.press("Alt+ArrowDown")
    expect(others.nth(1)).to_be_focused()
    expect(page.locator(SHOWN)).to_have_text("national government")
    expect(others.nth(1)).to_have_attribute("aria-current", "true")
    expect(others.nth(0)).not_to_have_attribute("aria-current", "true")

    page.keyboard.press("Alt+ArrowDown")
    expect(page.locator('[data-role="notice"]')).to_have_text("This is the other annotators' last span.")
    expect(others.nth(1)).to_be_focused()
    page.keyboard.press("Alt+ArrowUp")
    expect(others.nth(0)).to_be_focused()
    expect(page.locator(SHOWN)).to_have_text("Tuesday")
    page.keyboard.press(" ")  # Space hides it again, as a second click does
    expect(page.locator(SHOWN)).to_have_count(0)
    assert page.evaluate(FOCUSED_OTHER) == "0"

    # Read-only: stepping and showing wrote nothing, and Alt+arrows outside the list still choose one's own span.
    assert spans_as_stored() == before
    page.focus('[data-role="summary"]')
    page.keyboard.press("Alt+ArrowDown")
    expect(page.locator('[data-role="span-list"] [data-span-key]').first).to_have_attribute("aria-current", "true")
    expect(page.locator(SHOWN)).to_have_count(0)


def test_showing_another_annotators_span_scrolls_the_summary_to_it(
    page: Page, live_server: Any, log_in: Any, alice: Any, bob: Any, batch: Any, sample: Sample
) -> None:
    """A long summary scrolls in its own box: the span shown must come into that box's view, and the window's."""
    filler = " ".join(
        f"Paragraph {n} repeats what the council said about the bridge and its repairs." for n in range(40)
    )
    Sample.objects.filter(pk=sample.pk).update(summary=f"{sample.summary} {filler} The toll was doubled in May.")
    sample.refresh_from_db()
    make_span(sample, bob, "toll was doubled", ["Unwanted", "Unwanted.Extrinsic"])
    open_round_two(batch, alice, bob)
    page.set_viewport_size(LAPTOP)
    log_in(page, alice)
    open_sample(page, live_server, sample)
    summary = page.locator('[data-role="summary"]')
    assert summary.evaluate("(el) => el.scrollHeight > el.clientHeight + 200")  # the words lie far below the box's end

    page.focus('[data-role="summary"]')
    tab_until(page, f'{OTHERS}[data-other-index="0"]')
    page.keyboard.press("Enter")

    shown = page.locator(SHOWN)
    expect(shown).to_have_text("toll was doubled")
    inside = shown.evaluate(
        """(seg) => {
          const box = seg.closest('[data-role="summary"]').getBoundingClientRect();
          const words = seg.getBoundingClientRect();
          return words.top >= box.top && words.bottom <= box.bottom;
        }"""
    )
    assert inside, "the span shown stays hidden in the summary's box"
    expect(shown).to_be_in_viewport(ratio=1)
    expect(page.locator(f'{OTHERS}[data-other-index="0"]')).to_be_focused()


def test_the_round_two_shortcut_list_names_the_others_keys_and_still_fits_a_1366x768_screen(
    page: Page, live_server: Any, log_in: Any, alice: Any, bob: Any, batch: Any, sample: Sample
) -> None:
    make_span(sample, bob, "Tuesday", ["Benign"])
    open_round_two(batch, alice, bob)
    page.set_viewport_size(LAPTOP)
    log_in(page, alice)
    open_sample(page, live_server, sample)

    page.keyboard.press("?")

    card = page.locator('[data-role="shortcuts"] .overlay-card')
    expect(card).to_be_visible()
    expect(card).to_contain_text("in the other annotators' list, show their next or previous span")
    expect(card).to_contain_text("on a Mac also Option+←→")
    heights = card.evaluate("(e) => [e.scrollHeight, e.clientHeight]")
    assert heights[0] <= heights[1], heights


# ---------- an empty span list ----------


def test_with_no_span_a_one_line_empty_state_sits_right_under_the_spans_heading(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    page.set_viewport_size(LAPTOP)
    log_in(page, alice)
    open_sample(page, live_server, sample)

    gap = page.evaluate(
        """() => {
          const heading = document.getElementById('spans-title');
          let next = heading.nextElementSibling;
          while (next && next.getBoundingClientRect().height === 0) next = next.nextElementSibling;
          const style = getComputedStyle(next);
          return {
            gap: next.getBoundingClientRect().top - heading.getBoundingClientRect().bottom,
            role: next.dataset.role,
            lines: next.getBoundingClientRect().height / parseFloat(style.lineHeight || '0'),
            text: next.textContent,
          };
        }"""
    )
    assert gap["role"] == "no-spans", gap
    assert gap["gap"] <= 24, gap
    assert "No spans yet" in gap["text"] and "label key" in gap["text"], gap
    assert gap["lines"] < 1.5, gap  # one line at 1366 px wide

    # A saved span takes the empty state's place.
    select_words(page, "summary", sample.summary, "nine weeks")
    page.keyboard.press("1")
    expect(page.locator('[data-role="span-list"] li')).to_have_count(1)
    expect(page.locator('[data-role="no-spans"]')).to_be_hidden()


# ---------- Option+arrows on a Mac ----------


@pytest.fixture
def mac_page(new_page: Callable[..., Page]) -> Page:
    """A page whose browser says it runs on macOS, in a laptop's window."""
    return new_page(viewport=LAPTOP, user_agent=MAC_AGENT)


def test_on_a_mac_option_arrows_move_the_caret_by_word_and_option_down_still_chooses_a_span(
    mac_page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    # "Lintown's Harbour Bridge reopened on Tuesday after nine weeks of repairs. ..."
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    page = mac_page
    log_in(page, alice)
    open_sample(page, live_server, sample)
    assert page.evaluate("() => navigator.userAgentData && navigator.userAgentData.platform") == "macOS"
    page.focus('[data-role="summary"]')

    page.keyboard.press("Alt+ArrowRight")
    page.keyboard.press("Alt+ArrowRight")
    assert page.evaluate(CARET) == sample.summary.index(" Bridge")  # after "Harbour"
    page.keyboard.press("Shift+Alt+ArrowRight")
    assert page.evaluate("window.getSelection().toString()") == "Bridge"
    page.keyboard.press("ArrowRight")  # collapses at the focus, then one character on
    page.keyboard.press("Alt+ArrowLeft")
    assert page.evaluate(CARET) == sample.summary.index("Bridge")
    page.keyboard.press("Control+ArrowRight")  # Ctrl keeps working on a Mac too
    assert page.evaluate(CARET) == sample.summary.index(" reopened")

    page.keyboard.press("Alt+ArrowDown")  # no clash: Option+Down still chooses the next span
    expect(page.locator(f'[data-span-id="{span.pk}"]')).to_have_attribute("aria-current", "true")
    assert page.evaluate(CARET) == sample.summary.index(" reopened")


def test_elsewhere_alt_right_is_left_to_the_browser_and_the_platform_rule_reads_both_apis(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.focus('[data-role="summary"]')
    page.keyboard.press("Control+ArrowRight")
    at = page.evaluate(CARET)
    page.keyboard.press("Alt+ArrowRight")  # Linux: the browser's Forward, not a caret move
    assert page.evaluate(CARET) == at

    verdicts = page.evaluate(
        """async () => {
          const { isMacPlatform, movesByWord } = await import('/static/annotate/caret.js');
          const key = (key, mods) => ({ key, ctrlKey: false, altKey: false, ...mods });
          return {
            mac: [
              isMacPlatform({ userAgentData: { platform: 'macOS' }, platform: 'Linux x86_64' }),
              isMacPlatform({ platform: 'MacIntel' }),
              isMacPlatform({ userAgentData: { platform: '' }, platform: 'MacIntel' }),
            ],
            notMac: [
              isMacPlatform({ platform: 'Win32' }),
              isMacPlatform({ userAgentData: { platform: 'Linux' }, platform: 'Linux x86_64' }),
              isMacPlatform({}),
              isMacPlatform(null),
            ],
            byWord: [
              movesByWord(key('ArrowRight', { altKey: true }), true),
              movesByWord(key('ArrowLeft', { ctrlKey: true }), false),
              movesByWord(key('ArrowLeft', { ctrlKey: true }), true),
            ],
            notByWord: [
              movesByWord(key('ArrowRight', { altKey: true }), false),
              movesByWord(key('ArrowDown', { altKey: true }), true),
              movesByWord(key('ArrowRight', { altKey: true, ctrlKey: true }), true),
              movesByWord(key('ArrowRight', {}), true),
            ],
          };
        }"""
    )
    assert verdicts == {
        "mac": [True, True, True],
        "notMac": [False, False, False, False],
        "byWord": [True, True, True],
        "notByWord": [False, False, False, False],
    }
