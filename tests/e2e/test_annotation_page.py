"""The annotation page in a real browser: semantic highlighting, safety, navigation and shortcuts.
Saving spans, autosave, conflicts and retries are in test_annotation_saving.py; selecting text and
code-point offsets in test_annotation_selection.py."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, Route, expect

from annotate.models import Passage, Sample, SampleReview, SpanAnnotation
from annotate.services import rounds, spans
from tests.e2e.annotation_helpers import (
    SELECT_BY_CODE_POINTS,
    make_span,
    open_sample,
    select_words,
    wait_until_settled,
)

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

HOSTILE_SOURCE = (
    'The council met on Monday. <script>window.__pwned = true; alert("pwned")</script> '
    "It approved <b>new</b> rules & a budget of 3 < 4 million."
)


@pytest.fixture
def hostile_sample(batch: Any) -> Sample:
    passage = Passage.objects.create(project=batch.project, external_id="p-hostile", text=HOSTILE_SOURCE)
    return Sample.objects.create(
        project=batch.project, passage=passage, batch=batch, position=4, external_id="hostile",
        summary="The council approved <i>new</i> rules.", generator="model-x",
    )


# ---------- semantic highlighting ----------


def test_selecting_summary_words_shades_every_source_sentence_and_marks_the_closest(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample, embedded: Any
) -> None:
    sample.refresh_from_db()
    log_in(page, alice)
    open_sample(page, live_server, sample)
    source_sentences = page.locator('[data-role="source"] [data-sentence]')
    expect(source_sentences).to_have_count(len(sample.passage.sentences))

    assert select_words(page, "summary", sample.summary, "nine weeks of repairs") == "nine weeks of repairs"

    expect(page.locator('[data-role="source"] [data-sentence][data-similarity]')).to_have_count(
        len(sample.passage.sentences)
    )
    values = source_sentences.evaluate_all("els => els.map(e => e.dataset.similarity)")
    assert all(len(value.split(".")[1]) == 3 for value in values), values
    assert page.locator('[data-role="source"] .closest').count() >= 1
    assert page.locator('[data-role="source"] [class*="shade-"]').count() == len(values)
    # The most similar sentence gets the strongest shade and is among the closest.
    expect(page.locator('[data-role="source"] .shade-4.closest')).to_have_count(1)
    # The script renders sentences without changing the text.
    assert page.locator('[data-role="source"]').text_content() == sample.passage.text
    assert page.locator('[data-role="summary"]').text_content() == sample.summary


def test_selecting_source_words_shades_the_summary_sentences(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample, embedded: Any
) -> None:
    sample.refresh_from_db()
    log_in(page, alice)
    open_sample(page, live_server, sample)

    select_words(page, "source", sample.passage.text, "paid by the regional council")

    shaded = page.locator('[data-role="summary"] [data-sentence][data-similarity]')
    expect(shaded).to_have_count(len(sample.sentences))
    assert page.locator('[data-role="summary"] .closest').count() >= 1
    expect(page.locator('[data-role="summary"] .shade-4')).to_contain_text("funded by the national government")


def test_similarity_note_shows_while_embeddings_are_missing(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    note = page.locator('[data-role="similarity-note"]')
    page.evaluate("document.querySelector('[data-role=similarity-note]').hidden = true")

    with page.expect_response(lambda r: "similarity" in r.url and r.status == 409) as answer:
        select_words(page, "summary", sample.summary, "nine weeks")

    expect(note).to_be_visible()
    # The server's reason (which job computes them, or which model made them), not a fixed sentence.
    expect(note).to_have_text(f"highlighting not available yet: {answer.value.json()['detail']}")
    assert "job" in answer.value.json()["detail"]


# ---------- safety ----------


def test_script_in_the_source_is_shown_as_text(
    page: Page, live_server: Any, log_in: Any, alice: Any, hostile_sample: Sample
) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    log_in(page, alice)
    open_sample(page, live_server, hostile_sample)

    source = page.locator('[data-role="source"]')
    assert "<script>" in source.text_content()
    assert source.text_content() == HOSTILE_SOURCE
    assert source.locator("script, b").count() == 0
    assert page.locator('[data-role="summary"] i').count() == 0
    assert page.evaluate("window.__pwned") is None
    select_words(page, "summary", hostile_sample.summary, "<i>new</i> rules")
    page.keyboard.press("4")
    expect(page.locator("[data-span-id]")).to_contain_text("<i>new</i> rules")
    assert page.locator("[data-span-id] i").count() == 0
    assert dialogs == []


def test_blind_round_one_bob_does_not_see_alices_span(
    page: Page, live_server: Any, log_in: Any, alice: Any, bob: Any, sample: Sample
) -> None:
    make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"], note="alice's reason")
    log_in(page, bob)
    open_sample(page, live_server, sample)

    expect(page.locator('[data-role="no-spans"]')).to_be_visible()
    assert page.locator("[data-span-id]").count() == 0
    assert page.locator('[data-role="summary"] .seg').count() == 0
    assert "alice's reason" not in page.content()


def test_admin_sees_spans_read_only_with_annotator_names(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, alice: Any, bob: Any, sample: Sample
) -> None:
    make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    make_span(sample, bob, "national government", ["Benign"])
    log_in(page, admin_user)
    open_sample(page, live_server, sample, round=1)

    expect(page.locator("[data-span-id]")).to_have_count(2)
    expect(page.locator('[data-role="span-list"]')).to_contain_text("alice")
    expect(page.locator('[data-role="span-list"]')).to_contain_text("bob")
    for button in page.locator("[data-label]").all():
        expect(button).to_be_disabled()
    assert page.locator('[data-role="done"]').count() == 0
    select_words(page, "summary", sample.summary, "Tuesday")
    page.keyboard.press("1")
    page.locator("[data-span-id]").first.click()
    page.keyboard.press("Delete")
    assert page.locator('[data-role="span-editor"] textarea').count() == 0
    time.sleep(0.3)
    assert SpanAnnotation.objects.count() == 2


def test_round_two_shows_the_others_round_one_spans_and_copies_one(
    page: Page, live_server: Any, log_in: Any, alice: Any, bob: Any, batch: Any, sample: Sample
) -> None:
    make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"], note="alice's reason")
    make_span(sample, bob, "national government", ["Benign"], note="bob's reason")
    for person in (alice, bob):
        for each in batch.samples.all():
            spans.mark_sample_done(each, person, round=1, done=True)
    rounds.open_reconciliation_round(batch, reveal_names=False)
    log_in(page, alice)
    open_sample(page, live_server, sample)  # no ?round=: the latest round, 2

    expect(page.locator("[data-span-id]")).to_have_count(1)  # alice's copy in round 2
    others = page.locator('[data-role="others"]')
    expect(others).to_be_visible()
    expect(others).to_contain_text("disagreement")
    other = others.locator('[data-role="other-span"]')
    expect(other).to_have_count(1)
    expect(other).to_contain_text("national government")
    expect(other).to_contain_text("bob's reason")
    assert "bob" not in other.locator(".span-annotator").text_content()
    expect(other.locator("[data-agrees]")).to_have_attribute("data-agrees", "false")

    other.click()
    expect(page.locator('[data-role="summary"] .seg.preview')).to_have_text("national government")
    other.locator('[data-role="copy"]').click()

    expect(page.locator("[data-span-id]")).to_have_count(2)
    expect(other.locator("[data-agrees]")).to_have_attribute("data-agrees", "true")
    mine = list(SpanAnnotation.objects.filter(sample=sample, annotator=alice, round=2).order_by("start"))
    start = sample.summary.index("national government")
    assert [(s.start, s.end, s.labels) for s in mine][-1] == (start, start + len("national government"), ["Benign"])
    assert SpanAnnotation.objects.filter(round=1).count() == 2


# ---------- done, navigation, shortcuts ----------


def test_done_goes_to_the_next_unfinished_sample_and_home_links_it(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    first, second, third = batch.samples.order_by("position")
    SampleReview.objects.create(sample=second, annotator=alice, round=1, done=True)
    log_in(page, alice)
    open_sample(page, live_server, first)
    wait_until_settled(page)

    page.keyboard.press("d")
    page.wait_for_url(f"**{reverse('sample', args=[batch.project.slug, third.pk])}?round=1")
    review = SampleReview.objects.get(sample=first, annotator=alice, round=1)
    assert review.done and review.seconds_spent >= 0

    page.goto(live_server.url + "/")
    link = page.locator('[data-role="next-sample"]')
    assert reverse("sample", args=[batch.project.slug, third.pk]) in link.get_attribute("href")


def test_last_sample_done_says_batch_complete_and_the_submitted_round_turns_read_only(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    first, second, third = batch.samples.order_by("position")
    for sample in (first, second):
        SampleReview.objects.create(sample=sample, annotator=alice, round=1, done=True)
    log_in(page, alice)
    open_sample(page, live_server, third)
    expect(page.locator('[data-role="progress-text"]')).to_have_text("2/3 done")
    wait_until_settled(page)

    page.click('[data-role="done"]')
    expect(page.locator('[data-role="notice"]')).to_contain_text("Batch complete")
    expect(page.locator('[data-role="done-badge"]')).to_be_visible()
    expect(page.locator('[data-role="progress-text"]')).to_have_text("3/3 done")
    assert SampleReview.objects.get(sample=third, annotator=alice).done
    # Every sample done: the round is submitted, so it cannot be un-marked or changed here.
    expect(page.locator('[data-role="frozen-notice"]')).to_contain_text("You submitted round 1 of batch-1")
    expect(page.locator('[data-role="mark-not-done"]')).to_be_hidden()
    expect(page.locator('[data-label="Benign"]')).to_be_disabled()

    page.keyboard.press("D")  # D never un-marks: the sample stays done
    expect(page.locator('[data-role="done-badge"]')).to_be_visible()
    page.keyboard.press("Shift+D")
    time.sleep(0.3)
    assert SampleReview.objects.get(sample=third, annotator=alice).done


def test_previous_and_next_hotkeys_move_between_samples(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    first, second, _ = batch.samples.order_by("position")
    log_in(page, alice)
    open_sample(page, live_server, first)
    page.keyboard.press("]")
    page.wait_for_url(f"**{reverse('sample', args=[batch.project.slug, second.pk])}?round=1")
    expect(page.locator("#annotator.ready")).to_be_visible()
    page.keyboard.press("p")
    page.wait_for_url(f"**{reverse('sample', args=[batch.project.slug, first.pk])}?round=1")


def test_question_mark_opens_the_shortcut_overlay(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    overlay = page.locator('[data-role="shortcuts"]')
    expect(overlay).to_be_hidden()

    page.keyboard.press("?")
    expect(overlay).to_be_visible()
    for name in ("Unwanted.Intrinsic", "Unwanted.Extrinsic", "Questionable", "Benign", "Mark done",
                 "Mark not done", "Add that label", "bring back the last deleted span"):
        expect(overlay).to_contain_text(name)
    page.keyboard.press("Escape")
    expect(overlay).to_be_hidden()


def test_escape_clears_the_active_span_and_the_shading(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample, embedded: Any
) -> None:
    sample.refresh_from_db()
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.click(f'[data-span-id="{span.pk}"]')
    expect(page.locator('[data-role="span-editor"]')).to_be_visible()
    expect(page.locator('[data-role="source"] [data-similarity]').first).to_be_visible()

    page.keyboard.press("Escape")
    expect(page.locator('[data-role="span-editor"]')).to_be_hidden()
    expect(page.locator('[data-role="source"] [data-similarity]')).to_have_count(0)
    expect(page.locator(".span-item.active")).to_have_count(0)


def test_page_lays_out_two_columns_at_1280_pixels(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample, embedded: Any, tmp_path: Any
) -> None:
    """Summary beside source and a one-row toolbar on a 1280px screen; saves a screenshot to look at
    (set FAITHLAB_SCREENSHOT=/path.png to keep it)."""
    sample.refresh_from_db()
    make_span(sample, alice, "after nine weeks of repairs", ["Questionable"])
    inner = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"], note="Source says eight.")
    make_span(sample, alice, "national government", ["Unwanted", "Unwanted.Extrinsic"])
    page.set_viewport_size({"width": 1280, "height": 760})
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.click(f'[data-span-id="{inner.pk}"]')
    expect(page.locator('[data-role="source"] .closest').first).to_be_visible()

    summary = page.locator('[data-role="summary"]').bounding_box()
    source = page.locator('[data-role="source"]').bounding_box()
    assert summary["x"] + summary["width"] <= source["x"]
    assert abs(summary["y"] - source["y"]) < 2
    tops = page.locator(".toolbar > *:not([hidden])").evaluate_all(
        "els => els.map(e => e.getBoundingClientRect()).map(r => r.top + r.height / 2)"
    )
    assert max(tops) - min(tops) < 12, "the toolbar wraps at 1280px"
    path = os.environ.get("FAITHLAB_SCREENSHOT") or str(tmp_path / "annotation-page.png")
    page.screenshot(path=path, animations="disabled")


def _fake_similarity(shades: list[int]) -> str:
    return json.dumps({
        "side": "summary", "target": "source",
        "sentences": [{"index": i, "start": 0, "end": 1, "similarity": shade / 10, "shade": shade}
                      for i, shade in enumerate(shades)],
        "closest": [shades.index(max(shades))],
    })


def test_rapid_selection_changes_send_one_request_and_stale_answers_are_ignored(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample, embedded: Any
) -> None:
    sample.refresh_from_db()
    log_in(page, alice)
    open_sample(page, live_server, sample)
    held: list[Route] = []

    def answer(route: Route) -> None:
        body = json.loads(route.request.post_data or "{}")
        if not held:
            held.append(route)  # the first answer is slow: it arrives after the second
        else:
            assert body["start"] == sample.summary.index("national government")
            route.fulfill(status=200, content_type="application/json", body=_fake_similarity([0, 1, 2, 4]))

    page.route("**/similarity/", answer)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url) if "similarity" in request.url else None)

    # A burst of selections (as while dragging) is one request, for the last selection.
    page.evaluate(
        """([select, ranges]) => { const run = eval(select); for (const r of ranges) run(["summary", ...r]); }""",
        [SELECT_BY_CODE_POINTS, [[0, 5], [0, 9], [0, 16], [0, 24]]],
    )
    page.wait_for_timeout(600)
    assert len(requests) == 1
    assert len(held) == 1

    select_words(page, "summary", sample.summary, "national government")
    expect(page.locator('[data-role="source"] [data-sentence="3"]')).to_have_attribute("data-similarity", "0.400")
    try:
        held[0].fulfill(status=200, content_type="application/json", body=_fake_similarity([4, 0, 0, 0]))
    except Exception:  # noqa: S110 - the page aborted the stale request: also fine
        pass
    page.wait_for_timeout(300)
    expect(page.locator('[data-role="source"] [data-sentence="3"]')).to_have_class("sentence shade-4 closest")
    expect(page.locator('[data-role="source"] [data-sentence="0"]')).to_have_attribute("data-similarity", "0.000")


def test_an_imported_span_without_labels_says_so_and_the_page_loads_without_errors(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    # Real FaithBench files hold a few spans with an empty label list; they do not count in worst pooling.
    span = make_span(sample, alice, "nine weeks", [])
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    page.on("response", lambda response: problems.append(f"{response.status} {response.url}")
            if response.status >= 400 else None)
    log_in(page, alice)
    open_sample(page, live_server, sample)
    item = page.locator(f'[data-role="span-list"] [data-span-id="{span.pk}"]')
    expect(item.locator(".chip-none")).to_have_text("no label")
    assert problems == []
