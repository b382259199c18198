"""The annotation page in a real browser, continued: done and not done, several labels on a span,
undoing a deletion, frozen rounds, similarity states, flags and blind generators."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, Route, expect

from annotate.models import SampleFlag, SampleReview, SpanAnnotation
from annotate.services import embedding, spans
from tests.e2e.annotation_helpers import (
    eventually,
    make_span,
    open_sample,
    sample_url,
    saved_spans,
    select_words,
    wait_until_settled,
)

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# A write sent by the page's own user, outside the page's script: what a stale tab or a script would send.
POST_FROM_THE_PAGE = """
async ([url, body]) => {
  const token = JSON.parse(document.body.getAttribute("hx-headers"))["x-csrftoken"];
  const response = await fetch(url, {
    method: "POST", credentials: "same-origin", body: JSON.stringify(body),
    headers: {"Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": token},
  });
  return {status: response.status, body: await response.json()};
}
"""


def labels_of(span: SpanAnnotation) -> list[str]:
    span.refresh_from_db()
    return span.labels


def pressed_labels(page: Page) -> list[str]:
    return page.locator('[data-label][aria-pressed="true"]').evaluate_all("els => els.map(e => e.dataset.label)")


def submit_round_one(batch: Any, user: Any) -> None:
    """Mark every sample of the batch done: the annotator's round 1 counts as submitted and is frozen."""
    for each in batch.samples.all():
        spans.mark_sample_done(each, user, round=1, done=True)


# ---------- done and not done ----------


def test_d_on_a_done_sample_moves_on_and_never_unmarks_it(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    first, second, _ = batch.samples.order_by("position")
    SampleReview.objects.create(sample=first, annotator=alice, round=1, done=True)
    log_in(page, alice)
    open_sample(page, live_server, first)
    expect(page.locator('[data-role="done-badge"]')).to_be_visible()
    expect(page.locator('[data-role="done"]')).to_contain_text("Next")
    expect(page.locator('[data-role="mark-not-done"]')).to_be_visible()
    wait_until_settled(page)

    page.keyboard.press("d")

    page.wait_for_url(f"**{reverse('sample', args=[batch.project.slug, second.pk])}?round=1")
    assert SampleReview.objects.get(sample=first, annotator=alice, round=1).done
    assert not SampleReview.objects.filter(sample=second, annotator=alice, done=True).exists()


def test_mark_not_done_is_its_own_button_and_shift_d(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    first, second, _ = batch.samples.order_by("position")
    SampleReview.objects.create(sample=first, annotator=alice, round=1, done=True)
    log_in(page, alice)
    open_sample(page, live_server, first)
    expect(page.locator('[data-role="progress-text"]')).to_have_text("1/3 done")

    page.click('[data-role="mark-not-done"]')
    expect(page.locator('[data-role="done-badge"]')).to_be_hidden()
    expect(page.locator('[data-role="mark-not-done"]')).to_be_hidden()
    expect(page.locator('[data-role="done"]')).to_contain_text("Done")
    expect(page.locator('[data-role="progress-text"]')).to_have_text("0/3 done")
    assert eventually(lambda: not SampleReview.objects.get(sample=first, annotator=alice).done)

    wait_until_settled(page)
    page.keyboard.press("d")  # not done: D marks it done and moves on
    page.wait_for_url(f"**{reverse('sample', args=[batch.project.slug, second.pk])}?round=1")
    assert SampleReview.objects.get(sample=first, annotator=alice).done

    open_sample(page, live_server, first, round=1)
    page.keyboard.press("Shift+D")
    expect(page.locator('[data-role="done-badge"]')).to_be_hidden()
    assert eventually(lambda: not SampleReview.objects.get(sample=first, annotator=alice).done)
    assert page.url.endswith(sample_url(live_server, first, 1).removeprefix(live_server.url))


# ---------- several labels on one span ----------


def test_shift_and_a_label_key_add_and_remove_labels_and_a_span_keeps_one(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Any
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    select_words(page, "summary", sample.summary, "nine weeks")
    page.keyboard.press("1")
    expect(page.locator("[data-span-id]")).to_have_count(1)
    (span,) = saved_spans(sample, alice)

    page.keyboard.press("Shift+Digit4")
    assert eventually(lambda: labels_of(span) == ["Unwanted", "Unwanted.Intrinsic", "Benign"])
    item = page.locator(f'[data-span-id="{span.pk}"]')
    expect(item.locator(".chip")).to_have_text(["Unwanted.Intrinsic", "Benign"])
    assert pressed_labels(page) == ["Unwanted.Intrinsic", "Benign"]

    page.click('[data-label="Questionable"]', modifiers=["Shift"])
    assert eventually(lambda: labels_of(span) == ["Unwanted", "Unwanted.Intrinsic", "Benign", "Questionable"])
    page.keyboard.press("Shift+Digit1")
    assert eventually(lambda: labels_of(span) == ["Benign", "Questionable"])
    page.click('[data-label="Questionable"]', modifiers=["Shift"])
    assert eventually(lambda: labels_of(span) == ["Benign"])
    expect(item.locator(".chip")).to_have_text(["Benign"])

    # The last label stays: removing it is refused with a message, and nothing is sent.
    page.keyboard.press("Shift+Digit4")
    expect(page.locator('[data-role="notice"]')).to_contain_text("A span needs at least one label")
    assert pressed_labels(page) == ["Benign"]

    # A plain label key still sets the label, replacing the others.
    page.keyboard.press("2")
    assert eventually(lambda: labels_of(span) == ["Unwanted", "Unwanted.Extrinsic"])
    assert span.version == 6  # five label changes, the refused one not among them
    assert SpanAnnotation.objects.count() == 1


def test_a_span_with_two_labels_shows_both_chips_and_both_label_buttons_pressed(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Any
) -> None:
    # As FaithBench files store some spans: a Benign and an Unwanted label at once.
    span = make_span(sample, alice, "national government", ["Benign", "Unwanted.Intrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)

    chips = page.locator(f'[data-span-id="{span.pk}"] .chip')
    expect(chips).to_have_text(["Benign", "Unwanted.Intrinsic"])
    expect(chips.nth(0)).to_have_class("chip cat-B")
    expect(chips.nth(1)).to_have_class("chip cat-U")
    assert pressed_labels(page) == []
    page.click(f'[data-span-id="{span.pk}"]')
    assert pressed_labels(page) == ["Unwanted.Intrinsic", "Benign"]
    expect(page.locator('[data-role="span-editor"] .chip')).to_have_text(["Benign", "Unwanted.Intrinsic"])


# ---------- undoing a deletion ----------


def test_ctrl_z_and_the_undo_button_bring_a_deleted_span_back(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Any
) -> None:
    source = sample.passage.text
    at = source.index("eight weeks")
    original = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic", "Benign"],
                         note="The source says eight.")
    SpanAnnotation.objects.filter(pk=original.pk).update(
        source_start=at, source_end=at + len("eight weeks"), source_text="eight weeks"
    )
    fields = ("start", "end", "text", "labels", "note", "source_start", "source_end", "source_text")
    original.refresh_from_db()
    expected = [getattr(original, name) for name in fields]

    def only_span() -> SpanAnnotation | None:
        rows = list(SpanAnnotation.objects.filter(sample=sample, annotator=alice))
        return rows[0] if len(rows) == 1 else None

    log_in(page, alice)
    open_sample(page, live_server, sample)
    toast = page.locator('[data-role="undo-toast"]')
    expect(toast).to_be_hidden()

    page.click(f'[data-span-id="{original.pk}"]')
    page.keyboard.press("Delete")
    expect(toast).to_be_visible()
    expect(toast).to_contain_text("nine weeks")
    assert eventually(lambda: not SpanAnnotation.objects.filter(pk=original.pk).exists())

    page.keyboard.press("Control+z")
    expect(toast).to_be_hidden()
    restored = eventually(only_span)
    assert restored is not None and restored.pk != original.pk
    assert [getattr(restored, name) for name in fields] == expected
    expect(page.locator(f'[data-span-id="{restored.pk}"]')).to_have_class("span-item cat-U active")

    # The editor's delete button, then the toast's Undo button, with the mouse.
    page.click('[data-role="span-editor"] [data-role="delete"]')
    expect(toast).to_be_visible()
    assert eventually(lambda: not SpanAnnotation.objects.filter(pk=restored.pk).exists())
    page.click('[data-role="undo-toast"] [data-role="undo"]')
    again = eventually(lambda: (row := only_span()) is not None and row.pk != restored.pk and row)
    assert again and [getattr(again, name) for name in fields] == expected

    # Undo while the delete is still on its way (a route holds it): the span is created again
    # only after the delete, or the server would answer the create with the doomed old span.
    held: list[Route] = []
    posts: list[str] = []
    def a_delete(url: str) -> bool:
        return "/api/spans/" in url and "version=" in url

    page.route(a_delete, lambda route: held.append(route) if route.request.method == "DELETE" else route.continue_())
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    page.click(f'[data-span-id="{again.pk}"]')
    page.keyboard.press("Delete")
    for _ in range(100):
        if held:
            break
        page.wait_for_timeout(50)
    page.keyboard.press("Control+z")
    expect(page.locator('[data-role="span-list"] .span-item')).to_have_count(1)
    page.wait_for_timeout(300)
    assert posts == []
    held[0].continue_()
    page.unroute(a_delete)  # a URL predicate runs in this thread, which the polling below does not serve
    last = eventually(lambda: (row := only_span()) is not None and row.pk != again.pk and row)
    assert last and [getattr(last, name) for name in fields] == expected
    expect(page.locator(f'[data-span-id="{last.pk}"]')).to_be_visible()
    expect(page.locator('[data-role="save-status"]')).to_have_text("Saved")
    assert [row.pk for row in SpanAnnotation.objects.all()] == [last.pk]


# ---------- frozen rounds ----------


def test_a_submitted_round_is_read_only_and_the_api_answers_409_with_the_reason(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any, sample: Any
) -> None:
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"], note="kept")
    submit_round_one(batch, alice)
    log_in(page, alice)
    open_sample(page, live_server, sample)

    notice = page.locator('[data-role="frozen-notice"]')
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("You submitted round 1 of batch-1")
    for button in page.locator("[data-label]").all():
        expect(button).to_be_disabled()
    assert page.locator('[data-role="done"], [data-role="mark-not-done"]').count() == 0
    expect(page.locator('[data-role="flag"]')).to_be_visible()  # a report is not annotation work

    # Label keys, Shift+label keys and Delete do nothing.
    select_words(page, "summary", sample.summary, "national government")
    page.keyboard.press("2")
    page.click(f'[data-span-id="{span.pk}"]')
    page.keyboard.press("Shift+Digit4")
    page.keyboard.press("Delete")
    assert page.locator('[data-role="span-editor"] textarea').count() == 0
    expect(page.locator("[data-span-id]")).to_have_count(1)
    time.sleep(0.3)
    assert [(s.pk, s.labels, s.version) for s in saved_spans(sample, alice)] == [
        (span.pk, ["Unwanted", "Unwanted.Intrinsic"], 1)
    ]

    start = sample.summary.index("national government")
    answer = page.evaluate(POST_FROM_THE_PAGE, [reverse("span-list"), {
        "sample": sample.pk, "round": 1, "start": start, "end": start + len("national government"),
        "labels": ["Benign"],
    }])
    assert answer["status"] == 409
    assert answer["body"]["frozen"] is True
    assert answer["body"]["detail"] == notice.text_content().strip()
    assert SpanAnnotation.objects.count() == 1


def test_a_round_frozen_while_the_page_is_open_shows_the_reason_and_is_not_retried(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any, sample: Any
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    answers: list[int] = []  # the statuses of the page's span POSTs
    page.on("response", lambda response: answers.append(response.status)
            if response.request.method == "POST" and response.url.endswith("/api/spans/") else None)
    submit_round_one(batch, alice)  # e.g. in another tab

    select_words(page, "summary", sample.summary, "nine weeks")
    page.keyboard.press("1")

    notice = page.locator('[data-role="frozen-notice"]')
    expect(notice).to_contain_text("You submitted round 1 of batch-1")
    expect(page.locator('[data-role="notice"]')).to_have_text(notice.text_content())
    item = page.locator('[data-role="span-list"] .span-item')
    expect(item).to_contain_text("Not saved: You submitted round 1")
    expect(item.locator('[data-role="retry"]')).to_have_count(0)
    expect(item.locator('[data-role="discard"]')).to_be_visible()
    expect(page.locator('[data-label="Benign"]')).to_be_disabled()
    page.wait_for_timeout(1500)  # longer than the first retry delay
    # The refusal (409) is not sent again. Before it, the test server's in-memory SQLite may have answered "busy"
    # (503, which the page does retry) while another of its threads held the database.
    assert answers[-1] == 409 and [status for status in answers if status != 503] == [409], answers
    assert not SpanAnnotation.objects.exists()

    item.locator('[data-role="discard"]').click()
    expect(page.locator('[data-role="span-list"] .span-item')).to_have_count(0)


# ---------- similarity states ----------


def test_hovering_a_shaded_sentence_shows_its_score_and_the_closest_their_rank(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Any, embedded: Any
) -> None:
    sample.refresh_from_db()
    log_in(page, alice)
    open_sample(page, live_server, sample)
    with page.expect_response(lambda r: "similarity" in r.url and r.status == 200) as answer:
        select_words(page, "summary", sample.summary, "nine weeks of repairs")
    data = answer.value.json()

    sentences = page.locator('[data-role="source"] [data-sentence]')
    expect(sentences.and_(page.locator("[title]"))).to_have_count(len(sample.passage.sentences))
    for entry in data["sentences"]:
        sentence = page.locator(f'[data-role="source"] [data-sentence="{entry["index"]}"]')
        rank = data["closest"].index(entry["index"]) + 1 if entry["index"] in data["closest"] else 0
        title = f"similarity {entry['similarity']:.3f}" + (f" · closest #{rank}" if rank else "")
        expect(sentence).to_have_attribute("title", title)
        if rank:
            expect(sentence).to_have_attribute("data-rank", str(rank))
    best = page.locator(f'[data-role="source"] [data-sentence="{data["closest"][0]}"]')
    best.hover()
    assert best.get_attribute("title").startswith("similarity 0.")
    expect(page.locator('[data-role="no-match"]')).to_have_count(0)

    page.keyboard.press("Escape")
    expect(page.locator('[data-role="source"] [data-sentence][title]')).to_have_count(0)
    expect(page.locator('[data-role="source"] [data-rank]')).to_have_count(0)


def test_nothing_close_says_so_and_outlines_nothing(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Any, embedded: Any
) -> None:
    """The page's rendering of an empty ``closest`` in both directions: a route passes the real
    answer on with ``closest`` emptied (the test above has the real ranking find nothing)."""
    sample.refresh_from_db()
    log_in(page, alice)
    open_sample(page, live_server, sample)
    emptied = {"on": True}

    def nothing_close(route: Route) -> None:
        response = route.fetch()
        data = response.json()
        if emptied["on"]:
            data["closest"] = []
        route.fulfill(response=response, json=data)

    page.route("**/similarity/", nothing_close)
    select_words(page, "summary", sample.summary, "national government")
    no_match = page.locator('[data-role="no-match"]')
    expect(no_match).to_have_text("nothing in the source matches closely")
    expect(page.locator('.column-source [data-role="no-match"]')).to_have_count(1)
    expect(page.locator('[data-role="source"] [data-similarity]')).to_have_count(len(sample.passage.sentences))
    expect(page.locator('[data-role="source"] .closest')).to_have_count(0)

    select_words(page, "source", sample.passage.text, "regional council")
    expect(no_match).to_have_text("nothing in the summary matches closely")
    expect(page.locator(".column-summary").locator('[data-role="no-match"]')).to_have_count(1)
    expect(page.locator('[data-role="summary"] .closest')).to_have_count(0)

    emptied["on"] = False
    select_words(page, "summary", sample.summary, "nine weeks")
    expect(page.locator('[data-role="source"] .closest').first).to_be_visible()
    expect(no_match).to_have_count(0)


def test_a_selection_unrelated_to_the_source_gets_no_outline_from_the_real_ranking(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Any
) -> None:
    """No route here: the server's own ranking finds nothing close for words the source never touches."""
    summary = "Lintown's Harbour Bridge reopened on Tuesday. Giraffes hum at night to keep in touch."
    type(sample).objects.filter(pk=sample.pk).update(summary=summary)
    embedding.run_embedding_job(embedding.queue_embedding(sample.project).pk)
    sample.refresh_from_db()
    log_in(page, alice)
    open_sample(page, live_server, sample)
    select_words(page, "summary", summary, "Giraffes hum at night")
    expect(page.locator('[data-role="no-match"]')).to_have_text("nothing in the source matches closely")
    expect(page.locator('[data-role="source"] .closest')).to_have_count(0)
    select_words(page, "summary", summary, "reopened on Tuesday")
    expect(page.locator('[data-role="source"] .closest').first).to_be_visible()
    expect(page.locator('[data-role="no-match"]')).to_have_count(0)


def test_while_the_model_loads_the_page_says_so_and_asks_again(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Any, embedded: Any
) -> None:
    """The server answers 503 + Retry-After while its model loads; a route plays those first two
    answers (the page's rendering and retrying is what is tested), then the real server answers."""
    sample.refresh_from_db()
    log_in(page, alice)
    open_sample(page, live_server, sample)
    calls: list[dict[str, Any]] = []

    def loading_twice(route: Route) -> None:
        calls.append(json.loads(route.request.post_data or "{}"))
        if len(calls) <= 2:
            route.fulfill(status=503, headers={"Retry-After": "1"}, content_type="application/json",
                          body=json.dumps({"detail": "loading similarity model", "loading": True}))
        else:
            route.continue_()

    page.route("**/similarity/", loading_twice)
    select_words(page, "summary", sample.summary, "nine weeks of repairs")
    loading = page.locator('[data-role="similarity-loading"]')
    expect(loading).to_have_text("loading similarity…")
    expect(page.locator('[data-role="source"] [data-sentence][data-similarity]')).to_have_count(
        len(sample.passage.sentences)
    )
    expect(loading).to_have_count(0)
    start = sample.summary.index("nine weeks of repairs")
    assert calls == [{"side": "summary", "start": start, "end": start + len("nine weeks of repairs")}] * 3


# ---------- flags ----------


def test_flagging_a_sample_saves_it_shows_it_and_withdraws_it(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Any
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    form = page.locator('[data-role="flag-form"]')
    expect(form).to_be_hidden()

    page.click('[data-role="flag"]')
    expect(form).to_be_visible()
    comment = form.locator("textarea[name=comment]")
    expect(comment).to_be_focused()
    page.keyboard.type("The summary is in German. 1 d ]")  # shortcuts are off while typing
    form.locator('input[value="skip"]').click()
    form.locator('[data-role="flag-submit"]').click()

    flag = eventually(lambda: SampleFlag.objects.filter(sample=sample, annotator=alice, round=1).first())
    assert flag and (flag.kind, flag.comment) == ("skip", "The summary is in German. 1 d ]")
    expect(form).to_be_hidden()
    state = page.locator('[data-role="flag-state"]')
    expect(state).to_have_text("You flagged this sample as to skip: “The summary is in German. 1 d ]”")
    assert not SpanAnnotation.objects.exists() and not SampleReview.objects.exists()
    assert page.url.startswith(sample_url(live_server, sample))

    page.reload()
    expect(state).to_contain_text("as to skip")
    expect(page.locator('[data-role="flag"]')).to_have_attribute("aria-pressed", "true")
    page.click('[data-role="flag"]')
    expect(form.locator('input[value="skip"]')).to_be_checked()
    expect(comment).to_have_value("The summary is in German. 1 d ]")
    form.locator('[data-role="flag-withdraw"]').click()
    assert eventually(lambda: not SampleFlag.objects.exists())
    expect(state).to_be_hidden()
    expect(page.locator('[data-role="flag"]')).to_have_attribute("aria-pressed", "false")


def test_a_bad_flag_shows_the_servers_message_and_escape_closes_the_form(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Any
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.click('[data-role="flag"]')
    comment = page.locator('[data-role="flag-form"] textarea')
    comment.evaluate("el => el.removeAttribute('maxlength')")  # as an old browser would ignore it
    comment.fill("x" * 2001)
    page.click('[data-role="flag-submit"]')
    expect(page.locator('[data-role="flag-error"]')).to_contain_text("comment")
    expect(page.locator('[data-role="flag-error"]')).to_contain_text("at most 2000")
    assert not SampleFlag.objects.exists()
    page.keyboard.press("Escape")
    expect(page.locator('[data-role="flag-form"]')).to_be_hidden()


# ---------- blind annotation ----------


def test_the_generator_is_hidden_unless_the_project_reveals_it(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Any
) -> None:
    assert sample.generator == "model-a"
    log_in(page, alice)
    open_sample(page, live_server, sample)
    expect(page.locator("#summary-title")).to_have_text("Summary")
    assert "model-a" not in page.content()

    sample.project.reveal_generator = True
    sample.project.save(update_fields=["reveal_generator"])
    page.reload()
    expect(page.locator('[data-role="generator"]')).to_have_text("model-a")
