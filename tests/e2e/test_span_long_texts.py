"""Long texts on the span page: the closest source sentence is scrolled into view inside the source's own box when the
shading outlines it out of sight (not while the person scrolls that box), and Alt+↓ / Alt+↑ bring the chosen span into
view in the summary's box and its linked source text in the source's. The window itself never scrolls."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import Page, Route, expect

from annotate.models import Passage, Sample, SpanAnnotation
from tests.e2e.annotation_helpers import open_sample, select

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

CLOSEST = 55  # the source sentence the stubbed shading outlines as the closest, far down a 60-sentence source


def sentences_of(parts: list[str]) -> tuple[str, list[list[int]]]:
    text, bounds = "", []
    for part in parts:
        if text:
            text += " "
        bounds.append([len(text), len(text) + len(part)])
        text += part
    return text, bounds


@pytest.fixture
def long_sample(batch: Any) -> Sample:
    source, source_bounds = sentences_of(
        [f"Source sentence {i} tells how the council spent part {i} of the money on the harbour." for i in range(60)]
    )
    summary, summary_bounds = sentences_of(
        [f"Summary sentence {i} says the harbour works took part {i} of the budget." for i in range(30)]
    )
    passage = Passage.objects.create(project=batch.project, external_id="long", text=source, sentences=source_bounds)
    return Sample.objects.create(project=batch.project, passage=passage, batch=batch, position=10, external_id="long",
                                 summary=summary, sentences=summary_bounds, generator="model-long")


def stub_shading(page: Page) -> None:
    """The similarity API answered as for a summary selection: every source sentence faint, CLOSEST outlined."""

    def answer(route: Route) -> None:
        body = {"target": "source", "closest": [CLOSEST],
                "sentences": [{"index": i, "similarity": 0.9 if i == CLOSEST else 0.1, "shade": 4 if i == CLOSEST else 0}
                              for i in range(60)]}
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page.route("**/similarity/", answer)


IN_VIEW = """([box, target]) => {
  const outer = document.querySelector(box).getBoundingClientRect();
  const inner = document.querySelector(target).getBoundingClientRect();
  return inner.top >= outer.top - 1 && inner.bottom <= outer.bottom + 1;
}"""


def in_view(page: Page, box: str, target: str) -> bool:
    return page.evaluate(IN_VIEW, [box, target])


def scroll_top(page: Page, box: str) -> int:
    return page.evaluate("(box) => Math.round(document.querySelector(box).scrollTop)", box)


SOURCE = '[data-role="source"]'
SUMMARY = '[data-role="summary"]'


def test_the_closest_source_sentence_out_of_sight_is_scrolled_into_the_source_box(
    page: Page, live_server: Any, log_in: Any, alice: Any, long_sample: Sample
) -> None:
    log_in(page, alice)
    stub_shading(page)
    open_sample(page, live_server, long_sample)
    closest = f'{SOURCE} [data-sentence="{CLOSEST}"]'
    assert not in_view(page, SOURCE, closest)

    select(page, "summary", 0, len("Summary sentence 0"))

    expect(page.locator(f"{closest}.closest")).to_be_visible()
    page.wait_for_function("(selector) => document.querySelector(selector).scrollTop > 0", arg=SOURCE)
    assert in_view(page, SOURCE, closest)
    assert page.evaluate("window.scrollY") == 0


def test_the_source_box_stays_where_the_person_is_scrolling_it(
    page: Page, live_server: Any, log_in: Any, alice: Any, long_sample: Sample
) -> None:
    log_in(page, alice)
    stub_shading(page)
    open_sample(page, live_server, long_sample)
    box = page.locator(SOURCE).bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, 120)
    page.wait_for_function("(selector) => document.querySelector(selector).scrollTop > 0", arg=SOURCE)
    page.wait_for_timeout(200)
    where = scroll_top(page, SOURCE)

    select(page, "summary", 0, len("Summary sentence 0"))

    expect(page.locator(f'{SOURCE} [data-sentence="{CLOSEST}"].closest')).to_be_attached()
    page.wait_for_timeout(200)
    assert scroll_top(page, SOURCE) == where


def test_alt_down_scrolls_the_summary_to_the_span_and_the_source_to_its_link(
    page: Page, live_server: Any, log_in: Any, alice: Any, long_sample: Sample
) -> None:
    words = "Summary sentence 28"
    start = long_sample.summary.index(words)
    linked = "Source sentence 40 tells how the council spent part 40 of the money on the harbour."
    source_start = long_sample.passage.text.index(linked)
    SpanAnnotation.objects.create(sample=long_sample, annotator=alice, round=1, start=start, end=start + len(words),
                                  text=words, labels=["Benign"], source_start=source_start,
                                  source_end=source_start + len(linked), source_text=linked)
    log_in(page, alice)
    stub_shading(page)
    open_sample(page, live_server, long_sample)
    assert not in_view(page, SUMMARY, f"{SUMMARY} .seg.cat-B")

    page.keyboard.press("Alt+ArrowDown")

    expect(page.locator(f"{SUMMARY} .seg.active")).to_have_text(words)
    expect(page.locator(f"{SOURCE} .seg.linked")).to_have_text(linked)
    assert in_view(page, SUMMARY, f"{SUMMARY} .seg.active")
    assert in_view(page, SOURCE, f"{SOURCE} .seg.linked")
    # The shading that answers the span's words outlines another sentence: the link stays the one shown.
    expect(page.locator(f'{SOURCE} [data-sentence="{CLOSEST}"].closest')).to_be_attached()
    page.wait_for_timeout(200)
    assert in_view(page, SOURCE, f"{SOURCE} .seg.linked")
    assert page.evaluate("window.scrollY") == 0
