"""Right-to-left texts on the span page: an Arabic summary and source are laid out right to left (dir="auto" on the
texts; an English one stays left to right), the span list isolates a span's words (bdi) so its quote marks stay
around them, and the arrow keys move as the screen shows: in Arabic → moves the caret right on screen, which is
back in the text, Shift+→ selects the letters before the caret, Shift+Ctrl+→ the word before it, and the label key
saves exactly those characters."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Passage, Sample
from tests.e2e.annotation_helpers import CARET, PUT_CARET, eventually, open_sample, saved_spans

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SOURCE = "أعلنت وزارة الصحة يوم الثلاثاء عن افتتاح مستشفى جديد في القاهرة. تبلغ تكلفة المشروع 40 مليون جنيه."
SUMMARY = "افتتحت وزارة الصحة مستشفى جديدا في الإسكندرية يوم الأربعاء. تبلغ تكلفة المشروع 400 مليون جنيه."
CITY = "الإسكندرية"

# The caret's place on screen (the left edge of the collapsed selection at its focus).
CARET_X = """() => {
  const selection = window.getSelection();
  const range = document.createRange();
  range.setStart(selection.focusNode, selection.focusOffset);
  const rects = range.getClientRects();
  return (rects.length ? rects[rects.length - 1] : range.getBoundingClientRect()).left;
}"""

DIRECTION = "(role) => getComputedStyle(document.querySelector(`[data-role='${role}']`)).direction"


@pytest.fixture
def arabic(sample: Sample) -> Sample:
    passage = Passage.objects.create(project=sample.project, external_id="arabic", text=SOURCE)
    Sample.objects.filter(pk=sample.pk).update(summary=SUMMARY, passage=passage)
    sample.refresh_from_db()
    return sample


def test_arabic_texts_run_right_to_left_and_an_english_one_as_before(
    page: Page, live_server: Any, log_in: Any, alice: Any, arabic: Sample, batch: Any
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, arabic)
    for role in ("summary", "source"):
        expect(page.locator(f'[data-role="{role}"]')).to_have_attribute("dir", "auto")
        assert page.evaluate(DIRECTION, role) == "rtl"
    english = batch.samples.exclude(passage=arabic.passage).order_by("position").first()
    open_sample(page, live_server, english)
    assert page.evaluate(DIRECTION, "summary") == "ltr" and page.evaluate(DIRECTION, "source") == "ltr"


def test_arrows_move_as_the_screen_shows_and_shift_arrows_save_the_letters_they_select(
    page: Page, live_server: Any, log_in: Any, alice: Any, arabic: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, arabic)
    city_end = SUMMARY.index(CITY) + len(CITY)  # all in the Basic Multilingual Plane: code points are UTF-16 units
    page.evaluate(PUT_CARET, city_end - 2)
    before = page.evaluate(CARET_X)

    page.keyboard.press("ArrowRight")
    assert page.evaluate(CARET) == city_end - 3  # back in the text ...
    assert page.evaluate(CARET_X) > before  # ... and to the right on screen
    for _ in range(3):
        page.keyboard.press("ArrowLeft")
    assert page.evaluate(CARET) == city_end
    assert page.evaluate(CARET_X) < before

    for _ in range(4):
        page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Shift+ArrowLeft")
    assert page.evaluate("window.getSelection().toString()") == CITY[-3:]
    page.keyboard.press("1")
    expect(page.locator('[data-role="span-list"] li')).to_have_count(1)
    # The span list quotes the words isolated, so the quote marks stay on both sides of them.
    expect(page.locator('[data-role="span-list"] .span-text bdi')).to_have_text(CITY[-3:])

    # Shift+Ctrl+→ from a bare caret after the city's name selects the name: the word before the caret.
    page.evaluate(PUT_CARET, city_end)
    page.keyboard.press("Shift+Control+ArrowRight")
    assert page.evaluate("window.getSelection().toString()") == CITY
    page.keyboard.press("2")
    spans = eventually(lambda: len(saved_spans(arabic, alice)) == 2 and saved_spans(arabic, alice))
    assert [(span.start, span.end, span.text) for span in spans] == [
        (city_end - len(CITY), city_end, CITY),
        (city_end - 3, city_end, CITY[-3:]),
    ]

    # Ctrl+→ moves the caret a word back in the text: to the start of the word before it.
    page.evaluate(PUT_CARET, city_end)
    page.keyboard.press("Control+ArrowRight")
    assert page.evaluate(CARET) == city_end - len(CITY)
