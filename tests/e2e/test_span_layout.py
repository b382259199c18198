"""The span annotation page's layout on common screens, as a review of 100 samples at 1366x768 found it wanting:
the shortcut dialog ran past the screen with its Close button out of view; with the span editor open the page
scrolled and the span list began at the screen's foot; key hints and label chips were 9-11 px; and two spans on
the same words drew one underline that looked like a single span."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Batch, Sample, SpanAnnotation
from tests.e2e.annotation_helpers import make_span, open_sample, select_words

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1366, "height": 768}
DESKTOP = {"width": 1920, "height": 1080}
PHONE = {"width": 390, "height": 844}
DIALOG = '[data-role="shortcuts"]'
CLOSE = '[data-role="close-shortcuts"]'

# A sample of the size the review met: a news passage of 13 sentences and a summary of three.
TYPICAL_SOURCE = (
    "The library renovation in Ashgrove was approved by the regional water authority on Friday after a debate that "
    "lasted 13 hours. Officials said the project would cost 28.7 million pounds and take about 34 weeks to complete. "
    "Claire Dubois, who chairs the planning committee, said the decision had been delayed twice because of concerns "
    "about funding. Around 433 temporary jobs are expected to be created during construction, most of them filled "
    "by local contractors. Residents had raised objections over noise and traffic, and 26 percent of respondents to "
    "a public survey opposed the original plan. The revised design moves the main entrance away from the "
    "residential streets to the north. Work is scheduled to begin in May 2026, subject to a final environmental "
    "assessment. Tomas Novak, a spokesperson for a local residents' group, said they welcomed the changes but would "
    "keep monitoring the works. The council has promised monthly updates on its website and a telephone line for "
    "complaints. A similar scheme in a neighbouring town ran over budget by nearly a third last year. Opposition "
    "members argued that the money would be better spent on road repairs and social housing. The national "
    "government is expected to contribute half of the funding through a regional growth grant. Engineers said the "
    "ground conditions near the river had been surveyed in detail over the winter."
)
TYPICAL_SUMMARY = (
    "The regional water authority approved the library renovation in Ashgrove on Friday, with a cost of 57.4 million "
    "pounds. The work should take about 34 weeks and create roughly 433 jobs. Claire Dubois said the decision had "
    "been delayed because of funding concerns, while residents welcomed the plan unanimously."
)

# Every rendered element of the annotator that holds text of its own, with its computed font size.
TEXT_SIZES = """() => [...document.querySelectorAll('#annotator *')]
  .filter((e) => e.getClientRects().length && [...e.childNodes].some((n) => n.nodeType === 3 && n.data.trim()))
  .map((e) => ({what: `${e.tagName.toLowerCase()}.${e.className} "${e.textContent.trim().slice(0, 24)}"`,
                size: parseFloat(getComputedStyle(e).fontSize)}))"""

# The colours, top to bottom, of one pixel column (device pixels) of a PNG, read back through a canvas.
PIXEL_COLUMN = """async ([png, x]) => {
  const image = new Image();
  image.src = 'data:image/png;base64,' + png;
  await image.decode();
  const canvas = document.createElement('canvas');
  canvas.width = image.width; canvas.height = image.height;
  const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0);
  const data = context.getImageData(x, 0, 1, image.height).data;
  const column = [];
  for (let i = 0; i < data.length; i += 4) column.push([data[i], data[i + 1], data[i + 2]]);
  return column;
}"""


@pytest.fixture
def typical(batch: Batch, alice: Any) -> Sample:
    """The review's typical sample with two of alice's spans, one of them with a note."""
    sample = batch.samples.order_by("position").first()
    sample.summary = TYPICAL_SUMMARY
    sample.save(update_fields=["summary"])
    sample.passage.text = TYPICAL_SOURCE
    sample.passage.save(update_fields=["text"])
    note = "28.7 million in the source"
    make_span(sample, alice, "57.4 million pounds", ["Unwanted", "Unwanted.Intrinsic"], note=note)
    make_span(sample, alice, "while residents welcomed the plan unanimously", ["Unwanted", "Unwanted.Extrinsic"])
    return sample


@pytest.fixture
def sharp_page(new_page: Callable[..., Page]) -> Page:
    """Two device pixels to a CSS pixel, so a 2 px line and a 2 px gap each cover whole pixel rows."""
    return new_page(viewport=LAPTOP, device_scale_factor=2)


def open_editor(page: Page, live_server: Any, sample: Sample) -> None:
    open_sample(page, live_server, sample)
    expect(page.locator("[data-span-id]")).to_have_count(SpanAnnotation.objects.filter(sample=sample).count())
    page.locator('[data-role="span-list"] li').first.click()
    expect(page.locator('[data-role="span-editor"]')).to_be_visible()


@pytest.mark.parametrize("screen", [LAPTOP, PHONE], ids=["1366x768", "390x844"])
def test_the_shortcut_dialog_keeps_close_in_view_and_every_row_within_reach(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample, screen: dict[str, int]
) -> None:
    page.set_viewport_size(screen)
    log_in(page, alice)
    open_sample(page, live_server, sample)

    page.keyboard.press("?")

    expect(page.locator(DIALOG)).to_be_visible()
    close = page.locator(CLOSE)
    expect(close).to_be_in_viewport(ratio=1)
    rows = page.locator(f"{DIALOG} tr")
    assert rows.count() >= 15
    for i in range(rows.count()):
        row = rows.nth(i)
        row.scroll_into_view_if_needed()
        expect(row).to_be_in_viewport(ratio=1)
        expect(close).to_be_in_viewport(ratio=1)
        # Not under the Close bar either, which stays at the card's foot.
        row_box, bar_box = row.bounding_box(), page.locator(f"{DIALOG} .overlay-actions").bounding_box()
        assert row_box and bar_box and row_box["y"] + row_box["height"] <= bar_box["y"] + 1, (i, row_box, bar_box)
    close.click()
    expect(page.locator(DIALOG)).to_be_hidden()


def test_the_shortcut_dialog_fits_a_1366x768_screen_without_scrolling(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    page.set_viewport_size(LAPTOP)
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.keyboard.press("?")
    card = page.locator(f"{DIALOG} .overlay-card")
    expect(card).to_be_visible()
    heights = card.evaluate("(e) => [e.scrollHeight, e.clientHeight]")
    assert heights[0] <= heights[1], heights
    for key in ("D", "[", "]", "?"):
        expect(page.locator(f"{DIALOG} tr").filter(has=page.locator("kbd", has_text=key))).not_to_have_count(0)


@pytest.mark.parametrize("screen", [LAPTOP, DESKTOP], ids=["1366x768", "1920x1080"])
def test_with_the_editor_open_the_summary_editor_and_spans_fit_without_the_page_scrolling(
    page: Page, live_server: Any, log_in: Any, alice: Any, typical: Sample, screen: dict[str, int]
) -> None:
    page.set_viewport_size(screen)
    log_in(page, alice)
    open_editor(page, live_server, typical)

    sizes = page.evaluate("() => [document.scrollingElement.scrollHeight, innerHeight]")
    assert sizes[0] <= sizes[1], sizes
    for part in ('[data-role="summary"]', '[data-role="span-editor"]', ".label-button", '[data-role="done"]'):
        expect(page.locator(part).first).to_be_in_viewport(ratio=1)
    items = page.locator('[data-role="span-list"] li')
    expect(items).to_have_count(2)
    for i in range(2):
        expect(items.nth(i)).to_be_in_viewport(ratio=1)
    # The source scrolls in its own box, with the similarity legend under it in view.
    source = page.locator('[data-role="source"]')
    if screen == LAPTOP:
        assert source.evaluate("(e) => e.scrollHeight > e.clientHeight")
    expect(page.locator(".column-source .legend")).to_be_in_viewport(ratio=1)
    assert page.evaluate("() => document.scrollingElement.scrollWidth") <= screen["width"]


def test_on_a_phone_the_page_flows_and_every_span_can_be_reached(
    page: Page, live_server: Any, log_in: Any, alice: Any, typical: Sample
) -> None:
    page.set_viewport_size(PHONE)
    log_in(page, alice)
    open_editor(page, live_server, typical)

    assert page.evaluate("() => document.scrollingElement.scrollWidth") <= PHONE["width"]
    for part in ('[data-role="span-list"] li >> nth=1', '[data-role="source"]', '[data-role="span-editor"]'):
        target = page.locator(part)
        target.scroll_into_view_if_needed()
        expect(target).to_be_in_viewport()


@pytest.mark.parametrize("screen", [LAPTOP, PHONE], ids=["1366x768", "390x844"])
def test_key_hints_label_chips_and_other_text_are_12px_or_more(
    page: Page, live_server: Any, log_in: Any, alice: Any, typical: Sample, screen: dict[str, int]
) -> None:
    page.set_viewport_size(screen)
    log_in(page, alice)
    open_editor(page, live_server, typical)

    texts = page.evaluate(TEXT_SIZES)
    hints = [text for text in texts if text["what"].startswith("kbd.")]
    chips = [text for text in texts if text["what"].startswith("span.chip")]
    assert len(chips) >= 3  # the list's two and the editor's one
    if screen == LAPTOP:
        assert len(hints) >= 8  # the toolbar's and the editor's
    small = [text for text in texts if text["size"] < 12]
    assert small == [], small

    page.keyboard.press("Escape")
    page.keyboard.press("?")
    expect(page.locator(DIALOG)).to_be_visible()
    small = [text for text in page.evaluate(TEXT_SIZES) if text["size"] < 12]
    assert small == [], small


def runs_of_colour(column: list[list[int]]) -> list[list[int]]:
    """The coloured runs of a pixel column (far from white), as the colour at each run's middle."""
    runs: list[list[list[int]]] = []
    previous = False
    for pixel in column:
        coloured = max(255 - channel for channel in pixel) > 60
        if coloured and previous:
            runs[-1].append(pixel)
        elif coloured:
            runs.append([pixel])
        previous = coloured
    return [run[len(run) // 2] for run in runs]


def close_to(pixel: list[int], hex_colour: str) -> bool:
    wanted = [int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]
    return all(abs(a - b) <= 40 for a, b in zip(pixel, wanted, strict=True))


def test_two_spans_on_the_same_words_draw_two_separate_underlines_in_their_colours(
    sharp_page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    page = sharp_page
    colours = {label["name"]: label.get("color") for label in sample.project.taxonomy["labels"]}
    make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Extrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)
    expect(page.locator("[data-span-id]")).to_have_count(2)

    seg = page.locator('[data-role="summary"] .seg').filter(has_text="nine weeks")
    expect(seg).to_have_count(1)
    # Under the words ("nine weeks" has no descenders): from the bottom of the text's content box down.
    box = seg.evaluate("""(e) => { const r = e.getClientRects()[0]; const s = getComputedStyle(e);
      return {x: r.left, width: r.width, top: r.bottom - parseFloat(s.paddingBottom), bottom: r.bottom}; }""")
    clip = {"x": box["x"], "y": box["top"], "width": box["width"], "height": box["bottom"] - box["top"] + 1}
    png = base64.b64encode(page.screenshot(clip=clip)).decode()
    # 3 px into the words (6 device pixels): each label's line has a pattern of its own (static/annotate/cues.js),
    # and every pattern starts with a dash there, where a dashed line's middle may fall in a gap.
    column = page.evaluate(PIXEL_COLUMN, [png, 6])

    runs = runs_of_colour(column)
    assert len(runs) == 2, (runs, column)
    assert any(close_to(run, colours["Unwanted.Intrinsic"]) for run in runs), runs
    assert any(close_to(run, colours["Unwanted.Extrinsic"]) for run in runs), runs

    # The words stay plain text: same characters, same offsets, selectable as before.
    assert page.locator('[data-role="summary"]').text_content() == sample.summary
    assert select_words(page, "summary", sample.summary, "nine weeks") == "nine weeks"


def test_a_notice_covers_neither_the_span_list_nor_the_legend_at_1366x768(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    page.set_viewport_size({"width": 1366, "height": 768})
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.keyboard.press("Alt+ArrowDown")
    page.keyboard.press("Alt+ArrowUp")  # already the first span: the page says so in a notice
    notice = page.locator('[data-role="notice"]')
    expect(notice).to_contain_text("first span")
    box = notice.bounding_box()
    for covered in ('[data-role="span-list"]', ".legend", '[data-role="summary"]'):
        other = page.locator(covered).bounding_box()
        assert box["y"] + box["height"] <= other["y"] or other["y"] + other["height"] <= box["y"], covered
