"""The span page by keyboard alone: choosing an earlier span (Alt+arrows, or Tab to the list and Enter), a caret
the keys move so a selection can start mid-text, and linking a source sentence other than the first."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Assignment, Batch, Passage, Project, Sample, SpanAnnotation
from annotate.services import embedding
from annotate.text import split_sentences
from tests.e2e.annotation_helpers import eventually, make_span, open_sample, saved_spans, select_words, tab_until

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

ITEMS = '[data-role="span-list"] li'
FOCUSED_SPAN_KEY = "document.activeElement && document.activeElement.dataset.spanKey || null"


def split_source(sample: Sample) -> list[list[int]]:
    """The source's sentences as the embedding job splits them (without running the model)."""
    passage = sample.passage
    passage.sentences = split_sentences(passage.text)
    passage.save(update_fields=["sentences"])
    return passage.sentences


def test_an_earlier_span_is_chosen_by_keyboard_then_relabelled_and_deleted(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    earlier = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)
    select_words(page, "summary", sample.summary, "national government")
    page.keyboard.press("2")  # a new span, the active one
    expect(page.locator(ITEMS)).to_have_count(2)
    later = eventually(lambda: SpanAnnotation.objects.filter(text="national government").first())

    page.keyboard.press("Alt+ArrowUp")
    expect(page.locator(f'[data-span-id="{earlier.pk}"]')).to_have_attribute("aria-current", "true")
    page.keyboard.press("3")
    assert eventually(lambda: SpanAnnotation.objects.get(pk=earlier.pk).labels == ["Questionable"])
    page.keyboard.press("Delete")
    assert eventually(lambda: not SpanAnnotation.objects.filter(pk=earlier.pk).exists())
    assert [(span.pk, span.labels) for span in saved_spans(sample, alice)] == [
        (later.pk, ["Unwanted", "Unwanted.Extrinsic"])
    ]

    # With no span chosen Alt+Down takes the first one; at either end the key says so.
    page.keyboard.press("Alt+ArrowDown")
    expect(page.locator(f'[data-span-id="{later.pk}"]')).to_have_attribute("aria-current", "true")
    page.keyboard.press("Alt+ArrowDown")
    expect(page.locator('[data-role="notice"]')).to_have_text("This is the last span of the summary.")


def test_tab_reaches_the_span_list_and_enter_chooses_the_focused_span(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    first = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    second = make_span(sample, alice, "national government", ["Unwanted", "Unwanted.Extrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.focus('[data-role="summary"]')

    tab_until(page, f'[data-span-id="{first.pk}"]', most=15)
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED_SPAN_KEY) == f"s{second.pk}"
    page.keyboard.press("Enter")
    item = page.locator(f'[data-span-id="{second.pk}"]')
    expect(item).to_have_attribute("aria-current", "true")
    expect(item).to_be_focused()  # the list is drawn anew: the focus stays on the item
    expect(page.locator('[data-role="span-editor"] .editor-text')).to_have_text("national government")

    page.keyboard.press("Shift+Tab")  # the editor now sits above the list; Shift+Tab goes back one item
    page.keyboard.press(" ")
    expect(page.locator(f'[data-span-id="{first.pk}"]')).to_have_attribute("aria-current", "true")
    page.keyboard.press("Alt+ArrowDown")  # the focus goes along with the chosen span
    expect(item).to_be_focused()
    expect(item).to_have_attribute("aria-current", "true")


def test_a_keyboard_selection_starts_at_the_third_word_and_saves_a_span_there(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    # "Lintown's Harbour Bridge reopened on Tuesday after nine weeks of repairs. ..."
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.focus('[data-role="summary"]')

    page.keyboard.press("Control+ArrowRight")
    page.keyboard.press("Control+ArrowRight")
    caret = page.locator('[data-role="caret"]')
    expect(caret).to_be_visible()
    assert page.evaluate("window.getSelection().isCollapsed")
    page.keyboard.press("Shift+Control+ArrowRight")
    assert page.evaluate("window.getSelection().toString()") == "Bridge"
    expect(caret).to_be_hidden()  # words are selected: the selection shows, not the caret
    page.keyboard.press("Shift+Control+ArrowRight")
    page.keyboard.press("Shift+Control+ArrowLeft")  # one word back again
    page.keyboard.press("1")

    start = sample.summary.index("Bridge")
    spans = eventually(lambda: saved_spans(sample, alice))
    assert [(span.start, span.end, span.text) for span in spans] == [(start, start + len("Bridge"), "Bridge")]

    # Plain arrows move by a character, Ctrl+Left back by a word.
    page.keyboard.press("Control+ArrowLeft")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Shift+ArrowRight")
    assert page.evaluate("window.getSelection().toString()") == "r"


def test_a_later_source_sentence_is_linked_by_keyboard_with_the_caret(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    sentences = split_source(sample)
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)

    page.keyboard.press("Alt+ArrowDown")
    expect(page.locator(f'[data-span-id="{span.pk}"]')).to_have_attribute("aria-current", "true")
    page.focus('[data-role="summary"]')
    tab_until(page, '[data-role="source"]', most=15)
    page.keyboard.press("Control+ArrowDown")
    page.keyboard.press("Control+ArrowDown")  # the third sentence
    expect(page.locator(".column-summary .hint")).to_have_text(
        "Press L to link the source sentence at the caret to the selected span."
    )
    page.keyboard.press("l")

    start, end = sentences[2]
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).source_start == start)
    span.refresh_from_db()
    assert (span.source_end, span.source_text) == (end, sample.passage.text[start:end])
    expect(page.locator('[data-role="source"] .seg.linked')).to_have_text(sample.passage.text[start:end])
    expect(page.locator(".column-summary .hint")).not_to_contain_text("Press L")  # linked: nothing left to do

    page.keyboard.press("Control+ArrowUp")  # back to the second sentence: L links it instead
    page.keyboard.press("l")
    start, end = sentences[1]
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).source_start == start)
    assert SpanAnnotation.objects.get(pk=span.pk).source_end == end


# Two sentences say what the summary says, so the real ranking is confident about both (closest [0, 2]).
TWIN_SOURCE = (
    "The council approved the harbour budget on Monday. Fishing quotas were not discussed at the meeting. "
    "After a long debate the harbour budget was approved by the council. Rain delayed the ferry to Ostby."
)


def test_l_links_the_closest_outlined_sentence_and_again_the_next_closest(
    page: Page, live_server: Any, log_in: Any, alice: Any, project: Project
) -> None:
    """The real similarity answer (the packaged model over the embedded source) says which sentences are closest;
    L links the first of them, and L again the next one, each by its offsets in the source."""
    batch = Batch.objects.create(project=project, name="twins")
    passage = Passage.objects.create(project=project, external_id="twin", text=TWIN_SOURCE)
    sample = Sample.objects.create(project=project, passage=passage, batch=batch, position=0, external_id="t0",
                                   summary="The council approved the harbour budget last week.", generator="m")
    Assignment.objects.create(batch=batch, annotator=alice)
    embedding.run_embedding_job(embedding.queue_embedding(project).pk)
    sentences = Passage.objects.get(pk=passage.pk).sentences
    span = make_span(sample, alice, "council approved the harbour budget", ["Benign"])
    log_in(page, alice)
    open_sample(page, live_server, sample)
    with page.expect_response(lambda response: response.url.endswith("/similarity/")) as answered:
        page.keyboard.press("Alt+ArrowDown")
    closest = answered.value.json()["closest"]
    assert len(closest) == 2, closest
    expect(page.locator('[data-role="source"] [data-rank="1"]')).to_have_attribute("data-sentence", str(closest[0]))

    page.keyboard.press("l")
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).source_start == sentences[closest[0]][0])
    assert SpanAnnotation.objects.get(pk=span.pk).source_end == sentences[closest[0]][1]
    page.keyboard.press("l")  # pressed again: the next closest sentence
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).source_start == sentences[closest[1]][0])
    assert SpanAnnotation.objects.get(pk=span.pk).source_end == sentences[closest[1]][1]


def test_l_again_with_only_one_sentence_outlined_says_there_is_nothing_new_to_link(
    page: Page, live_server: Any, log_in: Any, alice: Any, embedded: Batch
) -> None:
    sample = embedded.samples.order_by("position").first()
    sentences = Passage.objects.get(pk=sample.passage_id).sentences
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)
    with page.expect_response(lambda response: response.url.endswith("/similarity/")) as answered:
        page.keyboard.press("Alt+ArrowDown")
    (only,) = answered.value.json()["closest"]  # the real ranking is sure of one sentence only
    page.keyboard.press("l")
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).source_start == sentences[only][0])

    page.keyboard.press("l")
    expect(page.locator('[data-role="notice"]')).to_contain_text("linked to that sentence already")
    assert SpanAnnotation.objects.get(pk=span.pk).source_end == sentences[only][1]
