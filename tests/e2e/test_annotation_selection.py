"""The annotation page in a real browser: selecting text with the mouse and the keyboard, snapping to
whole words, and offsets in code points end to end."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Sample, SpanAnnotation
from annotate.services import embedding
from tests.e2e.annotation_helpers import eventually, make_span, open_sample, saved_spans, select_words

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

EMOJI_SUMMARY = "The bridge 🌉 reopened on Tuesday. 𝐍𝐢𝐧𝐞 weeks of work 👷🏽‍♀️ cost 12.4 million euros."


@pytest.fixture
def emoji_sample(batch: Any) -> Sample:
    """A summary with emoji, a skin-tone ZWJ sequence and mathematical letters (all outside the BMP)."""
    first = batch.samples.order_by("position").first()
    sample = Sample.objects.create(
        project=batch.project, passage=first.passage, batch=batch, position=3, external_id="emoji",
        summary=EMOJI_SUMMARY, generator="model-e",
    )
    embedding.run_embedding_job(embedding.queue_embedding(batch.project).pk)
    sample.refresh_from_db()
    return sample


def char_box(page: Page, role: str, text: str, words: str, last: bool = False) -> dict[str, float]:
    """Viewport box of the first (or last) character of ``words`` in a rendered text."""
    at = text.index(words) + (len(words) - 1 if last else 0)
    return page.evaluate(
        """([role, at]) => {
          const el = document.querySelector(`[data-role="${role}"]`);
          const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
          let cp = 0;
          for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            let unit = 0;
            for (const ch of node.data) {
              if (cp === at) {
                const range = document.createRange();
                range.setStart(node, unit); range.setEnd(node, unit + ch.length);
                const r = range.getBoundingClientRect();
                return {left: r.left, right: r.right, y: r.top + r.height / 2};
              }
              cp += 1; unit += ch.length;
            }
          }
          throw new Error("no such character");
        }""",
        [role, at],
    )


def test_dragging_the_mouse_over_words_then_clicking_a_label_saves_them(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    words = "national government"
    first = char_box(page, "summary", sample.summary, words)
    last = char_box(page, "summary", sample.summary, words, last=True)

    page.mouse.move(first["left"] + 1, first["y"])
    page.mouse.down()
    page.mouse.move((first["left"] + last["right"]) / 2, last["y"], steps=5)
    page.mouse.move(last["right"] - 1, last["y"], steps=3)
    page.mouse.up()
    assert page.evaluate("window.getSelection().toString()") == words
    page.click('[data-label="Questionable"]')

    expect(page.locator("[data-span-id]")).to_have_count(1)
    (span,) = saved_spans(sample, alice)
    start = sample.summary.index(words)
    assert (span.start, span.end, span.text, span.labels) == (start, start + len(words), words, ["Questionable"])


def drag(page: Page, start: dict[str, float], end: dict[str, float]) -> None:
    """Press the mouse inside one character box and move it inside another (button still down).

    Inside, not at the exact middle: Chromium starts no selection from a press at a glyph's midpoint.
    """
    page.mouse.move(start["left"] + 0.7 * (start["right"] - start["left"]), start["y"])
    page.mouse.down()
    page.mouse.move((start["left"] + end["right"]) / 2, end["y"], steps=5)
    page.mouse.move(end["left"] + 0.3 * (end["right"] - end["left"]), end["y"], steps=3)


def test_a_drag_that_cuts_words_takes_the_whole_words_and_alt_keeps_exact_characters(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    # From inside "national" (its 't') to inside "government" (its 'r').
    start = char_box(page, "summary", sample.summary, "tional government")
    end = char_box(page, "summary", sample.summary, "national gover", last=True)
    drag(page, start, end)
    page.mouse.up()
    assert page.evaluate("window.getSelection().toString()") == "national government"
    page.click('[data-label="Benign"]')
    expect(page.locator("[data-span-id]")).to_have_count(1)
    (span,) = saved_spans(sample, alice)
    assert span.text == "national government"

    page.keyboard.press("Escape")
    drag(page, start, end)
    page.keyboard.down("Alt")
    page.mouse.up()
    page.keyboard.up("Alt")
    selected = page.evaluate("window.getSelection().toString()")
    # Exactly what the mouse covered: cut words stay cut.
    assert selected != "national government" and selected in "national government" and "nal gove" in selected


def test_double_clicking_a_source_word_selects_it_without_linking(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample, embedded: Any
) -> None:
    sample.refresh_from_db()
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.click(f'[data-span-id="{span.pk}"]')
    expect(page.locator('[data-role="source"] [data-sentence="0"][data-similarity]')).to_have_count(1)

    box = char_box(page, "source", sample.passage.text, "eight")
    page.mouse.dblclick(box["right"], box["y"])
    assert page.evaluate("window.getSelection().toString()").strip() == "eight"
    page.keyboard.press("L")
    start = sample.passage.text.index("eight")
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).source_start == start)
    span.refresh_from_db()
    assert (span.source_end, span.version) == (start + len("eight"), 2)


def test_keyboard_selection_with_shift_arrows_shades_and_saves(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample, embedded: Any
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    words = "nine"
    start = sample.summary.index(words)
    # Click just inside the left edge of the word's first letter: the caret lands before it.
    box = page.evaluate(
        """(start) => {
          const el = document.querySelector('[data-role="summary"]');
          const node = [...el.querySelectorAll('*'), el].flatMap(e => [...e.childNodes])
            .filter(n => n.nodeType === 3).find(n => n.data.includes('nine'));
          const at = node.data.indexOf('nine');
          const range = document.createRange();
          range.setStart(node, at); range.setEnd(node, at + 1);
          const r = range.getBoundingClientRect();
          return {x: r.left + 1, y: r.top + r.height / 2};
        }""",
        start,
    )
    page.mouse.click(box["x"], box["y"])
    expect(page.locator('[data-role="summary"]')).to_be_focused()
    for _ in words:
        page.keyboard.press("Shift+ArrowRight")
    assert page.evaluate("window.getSelection().toString()") == words

    expect(page.locator('[data-role="source"] [data-sentence][data-similarity]').first).to_be_visible()
    page.keyboard.press("2")

    expect(page.locator("[data-span-id]")).to_have_count(1)
    (span,) = saved_spans(sample, alice)
    assert (span.start, span.end, span.text) == (start, start + len(words), words)
    assert span.labels == ["Unwanted", "Unwanted.Extrinsic"]


def test_emoji_offsets_are_code_points_end_to_end(
    page: Page, live_server: Any, log_in: Any, alice: Any, emoji_sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, emoji_sample)
    summary = page.locator('[data-role="summary"]')
    assert summary.text_content() == EMOJI_SUMMARY
    expect(summary.locator("[data-sentence]")).to_have_count(len(emoji_sample.sentences))

    # After one emoji: UTF-16 and code-point offsets differ by one.
    assert select_words(page, "summary", EMOJI_SUMMARY, "reopened") == "reopened"
    page.keyboard.press("1")
    expect(page.locator("[data-span-id]")).to_have_count(1)
    # After a ZWJ sequence and mathematical letters: they differ by much more.
    words = "cost 12.4 million"
    assert select_words(page, "summary", EMOJI_SUMMARY, words) == words
    page.click('[data-label="Benign"]')
    expect(page.locator("[data-span-id]")).to_have_count(2)
    # A selection that contains non-BMP characters itself.
    words = "𝐍𝐢𝐧𝐞 weeks of work 👷🏽‍♀️"
    assert select_words(page, "summary", EMOJI_SUMMARY, words) == words
    page.keyboard.press("3")
    expect(page.locator("[data-span-id]")).to_have_count(3)

    spans = {span.text: span for span in saved_spans(emoji_sample, alice)}
    for text in ("reopened", "cost 12.4 million", "𝐍𝐢𝐧𝐞 weeks of work 👷🏽‍♀️"):
        span = spans[text]
        start = EMOJI_SUMMARY.index(text)
        assert (span.start, span.end) == (start, start + len(text))
        assert EMOJI_SUMMARY[span.start : span.end] == text
    # Rendering the saved spans keeps the text exact and highlights the right characters.
    page.reload()
    expect(page.locator("[data-span-id]")).to_have_count(3)
    assert summary.text_content() == EMOJI_SUMMARY
    texts = page.locator('[data-role="summary"] .seg').all_text_contents()
    assert "reopened" in texts and "cost 12.4 million" in texts
