"""The span page on text that is not space-separated Latin: a drag or Ctrl+arrows in Chinese stop at the words the
browser's Intl.Segmenter finds instead of the whole clause, plain arrows cross an emoji ZWJ family, a flag or a
letter with a combining accent in one press (as the browser's own Shift+arrows do), and the spans saved from there
still carry code-point offsets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Sample
from tests.e2e.annotation_helpers import CARET, MAC_AGENT, PUT_CARET, open_sample

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

CHINESE = "北京大学发现了新方法"
FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # man, ZWJ, woman, ZWJ, girl: one character on screen
FLAG = "\U0001f1eb\U0001f1f7"  # two regional indicators: 🇫🇷
ACCENTED_E = "e\u0301"  # e and a combining acute accent
SUMMARY = f"{CHINESE}。The family {FAMILY} flew from Paris {FLAG} to a Cafe\u0301 by the sea."
ITEMS = '[data-role="span-list"] li'

# The word-like segments the browser's own Intl.Segmenter finds in a text, as [start, end) in UTF-16 units, with
# the locale the page uses (its lang attribute).
SEGMENTER_WORDS = """(text) => {
  const segmenter = new Intl.Segmenter(document.documentElement.lang || undefined, { granularity: "word" });
  return [...segmenter.segment(text)].filter((s) => s.isWordLike).map((s) => [s.index, s.index + s.segment.length]);
}"""

# The viewport box of the character at a UTF-16 offset of the summary.
CHAR_BOX = """(at) => {
  const el = document.querySelector('[data-role="summary"]');
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  let seen = 0;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (at < seen + node.data.length) {
      const range = document.createRange();
      range.setStart(node, at - seen);
      range.setEnd(node, at - seen + 1);
      const r = range.getBoundingClientRect();
      return { left: r.left, right: r.right, y: r.top + r.height / 2 };
    }
    seen += node.data.length;
  }
  throw new Error(`offset ${at} outside the summary`);
}"""


def utf16(text: str) -> int:
    """The length of a text in UTF-16 code units, the DOM's count."""
    return len(text.encode("utf-16-le")) // 2


@pytest.fixture
def scripts_sample(batch: Any) -> Sample:
    """A sample whose summary holds Chinese, an emoji ZWJ family, a flag and a combining accent."""
    first = batch.samples.order_by("position").first()
    return Sample.objects.create(
        project=batch.project, passage=first.passage, batch=batch, position=3, external_id="scripts",
        summary=SUMMARY, generator="model-s",
    )


def spans_from_api(page: Page, live_server: Any, sample: Sample) -> list[dict[str, Any]]:
    """The sample's spans as the API lists them to the signed-in annotator."""
    response = page.request.get(f"{live_server.url}/api/samples/{sample.pk}/spans/")
    assert response.ok, response.text()
    return response.json()


def assert_code_point_offsets(spans: list[dict[str, Any]], summary: str, texts: list[str]) -> None:
    """Each span's offsets slice its own text out of the summary, counted in code points as Python does."""
    assert sorted(span["text"] for span in spans) == sorted(texts)
    for span in spans:
        assert summary[span["start"]:span["end"]] == span["text"]
        assert span["start"] == summary.index(span["text"])


def test_a_drag_inside_chinese_text_takes_the_segmenters_word_not_the_whole_clause(
    page: Page, live_server: Any, log_in: Any, alice: Any, scripts_sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, scripts_sample)
    target = SUMMARY.index("现")
    # The Chinese run is all BMP characters at the text's start: code points and UTF-16 units agree there.
    words = page.evaluate(SEGMENTER_WORDS, CHINESE)
    start, end = next((s, e) for s, e in words if s <= target < e)
    word = CHINESE[start:end]
    assert 2 <= len(word) < len(CHINESE), f"the segmenter's word around 现 is {word!r}"

    # Press inside the word's first character and release inside its last: both ends cut the word.
    first, last = page.evaluate(CHAR_BOX, start), page.evaluate(CHAR_BOX, end - 1)
    page.mouse.move(first["left"] + 0.7 * (first["right"] - first["left"]), first["y"])
    page.mouse.down()
    page.mouse.move(last["left"] + 0.7 * (last["right"] - last["left"]), last["y"], steps=4)
    page.mouse.up()

    assert page.evaluate("window.getSelection().toString()") == word
    page.keyboard.press("1")
    expect(page.locator(ITEMS)).to_have_count(1)
    expect(page.locator("[data-span-id]")).to_have_count(1)
    assert_code_point_offsets(spans_from_api(page, live_server, scripts_sample), SUMMARY, [word])


def test_ctrl_arrows_stop_at_each_chinese_word_and_latin_words_stay_whole(
    page: Page, live_server: Any, log_in: Any, alice: Any, scripts_sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, scripts_sample)
    ends = [end for _, end in page.evaluate(SEGMENTER_WORDS, CHINESE)]
    assert len(ends) > 1, "the segmenter should split the clause into several words"
    page.evaluate(PUT_CARET, 0)

    stops = []
    for _ in ends:
        page.keyboard.press("Control+ArrowRight")
        stops.append(page.evaluate(CARET))
    assert stops == ends
    page.keyboard.press("Control+ArrowRight")  # past the full stop, "The" is one word as before
    assert page.evaluate(CARET) == SUMMARY.index(" family")

    starts = [start for start, _ in page.evaluate(SEGMENTER_WORDS, CHINESE)]
    back = []
    page.keyboard.press("Control+ArrowLeft")  # to the start of "The"
    for _ in starts:
        page.keyboard.press("Control+ArrowLeft")
        back.append(page.evaluate(CARET))
    assert back == starts[::-1]

    # Shift+Ctrl+Right selects the first word alone, and it saves with code-point offsets.
    page.keyboard.press("Shift+Control+ArrowRight")
    first_word = CHINESE[: ends[0]]
    assert page.evaluate("window.getSelection().toString()") == first_word
    page.keyboard.press("2")
    expect(page.locator("[data-span-id]")).to_have_count(1)
    assert_code_point_offsets(spans_from_api(page, live_server, scripts_sample), SUMMARY, [first_word])


@pytest.fixture
def mac_page(new_page: Callable[..., Page]) -> Page:
    """A page whose browser says it runs on macOS, where Option+arrows move by word."""
    return new_page(user_agent=MAC_AGENT)


def test_on_a_mac_option_arrows_stop_at_each_chinese_word_too(
    mac_page: Page, live_server: Any, log_in: Any, alice: Any, scripts_sample: Sample
) -> None:
    page = mac_page
    log_in(page, alice)
    open_sample(page, live_server, scripts_sample)
    words = page.evaluate(SEGMENTER_WORDS, CHINESE)
    page.evaluate(PUT_CARET, 0)

    page.keyboard.press("Alt+ArrowRight")
    page.keyboard.press("Alt+ArrowRight")
    assert page.evaluate(CARET) == words[1][1]
    page.keyboard.press("Alt+ArrowLeft")
    assert page.evaluate(CARET) == words[1][0]


def test_without_intl_segmenter_the_keys_fall_back_to_runs_and_code_points(
    page: Page, live_server: Any, log_in: Any, alice: Any, scripts_sample: Sample
) -> None:
    page.add_init_script("delete Intl.Segmenter;")
    log_in(page, alice)
    open_sample(page, live_server, scripts_sample)
    assert page.evaluate("typeof Intl.Segmenter") == "undefined"
    page.evaluate(PUT_CARET, 0)

    page.keyboard.press("Control+ArrowRight")  # the whole run, as before the segmenter was used
    assert page.evaluate(CARET) == len(CHINESE)
    page.keyboard.press("Control+ArrowRight")
    assert page.evaluate(CARET) == SUMMARY.index(" family")

    at = utf16(SUMMARY[: SUMMARY.index(FLAG)])
    page.evaluate(PUT_CARET, at)
    page.keyboard.press("ArrowRight")  # one code point: the first regional indicator
    assert page.evaluate(CARET) == at + 2


@pytest.mark.parametrize(
    ("before", "cluster"),
    [("family ", FAMILY), ("Paris ", FLAG), ("Caf", ACCENTED_E)],
    ids=["zwj-family", "flag", "combining-accent"],
)
def test_an_arrow_crosses_one_whole_character_as_shift_arrow_does(
    page: Page, live_server: Any, log_in: Any, alice: Any, scripts_sample: Sample, before: str, cluster: str
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, scripts_sample)
    at = utf16(SUMMARY[: SUMMARY.index(before + cluster) + len(before)])
    after = at + utf16(cluster)

    page.evaluate(PUT_CARET, at)
    page.keyboard.press("ArrowRight")
    assert page.evaluate(CARET) == after
    page.keyboard.press("ArrowLeft")
    assert page.evaluate(CARET) == at

    # The browser's own Shift+Right takes the same one character.
    page.keyboard.press("Shift+ArrowRight")
    assert page.evaluate("window.getSelection().toString()") == cluster
    assert page.evaluate(CARET) == after


def test_spans_saved_after_arrow_moves_over_emoji_keep_code_point_offsets(
    page: Page, live_server: Any, log_in: Any, alice: Any, scripts_sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, scripts_sample)
    # From before the family: one Right crosses it, the next the space; Shift+Right then takes "flew".
    page.evaluate(PUT_CARET, utf16(SUMMARY[: SUMMARY.index(FAMILY)]))
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    for _ in "flew":
        page.keyboard.press("Shift+ArrowRight")
    assert page.evaluate("window.getSelection().toString()") == "flew"
    page.keyboard.press("1")
    expect(page.locator("[data-span-id]")).to_have_count(1)

    # From before "Cafe": four presses of Shift+Right, the accented e being one of them.
    page.evaluate(PUT_CARET, utf16(SUMMARY[: SUMMARY.index("Cafe")]))
    for _ in range(4):
        page.keyboard.press("Shift+ArrowRight")
    cafe = "Caf" + ACCENTED_E
    assert page.evaluate("window.getSelection().toString()") == cafe
    page.keyboard.press("2")
    expect(page.locator("[data-span-id]")).to_have_count(2)

    # The flag alone, taken with one Shift+Right after one Right over the space before it.
    page.evaluate(PUT_CARET, utf16(SUMMARY[: SUMMARY.index(" " + FLAG)]))
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Shift+ArrowRight")
    assert page.evaluate("window.getSelection().toString()") == FLAG
    page.keyboard.press("3")
    expect(page.locator("[data-span-id]")).to_have_count(3)

    assert_code_point_offsets(spans_from_api(page, live_server, scripts_sample), SUMMARY, ["flew", cafe, FLAG])
