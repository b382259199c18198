"""The span page over a long session: the login session ending or changing hands while the page is open, the server
going away for a while, and a note typed in a stale tab. Nothing typed is lost, nothing is saved twice or under
another user's name, and the page says what to do (found by the long-session browser review)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.contrib.sessions.models import Session
from playwright.sync_api import Page, Route, expect

from annotate.models import Sample, SpanAnnotation
from tests.e2e.annotation_helpers import eventually, make_span, open_sample, saved_spans, select_words

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

STATUS = '[data-role="save-status"]'
BANNER = '[data-role="session-banner"]'
FAILED = '[data-role="span-list"] .span-state.failed'


def label_words(page: Page, sample: Sample, words: str, key: str) -> None:
    select_words(page, "summary", sample.summary, words)
    page.keyboard.press(key)


def end_the_session_with_a_saved_span(page: Page, live_server: Any, log_in: Any, user: Any, sample: Sample) -> None:
    """Log in, save "nine weeks", then end every login session on the server (as an expiry does)."""
    log_in(page, user)
    open_sample(page, live_server, sample)
    label_words(page, sample, "nine weeks", "1")
    expect(page.locator("[data-span-id]")).to_have_count(1)
    Session.objects.all().delete()


def test_after_the_session_ends_the_page_says_so_and_retry_saves_the_span_and_note_after_logging_in_again(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    end_the_session_with_a_saved_span(page, live_server, log_in, alice, sample)

    label_words(page, sample, "national government", "2")
    page.keyboard.press("E")
    page.keyboard.type("typed after the session ended")
    page.keyboard.press("Escape")

    # The status and the banner say what happened and what to do; nothing is lost on the page.
    expect(page.locator(STATUS)).to_have_attribute("data-state", "failed")
    expect(page.locator(STATUS)).to_contain_text("you are logged out: log in again in another tab")
    expect(page.locator(BANNER)).to_be_visible()
    expect(page.locator(BANNER)).to_contain_text("You are logged out")
    expect(page.locator(FAILED)).to_contain_text("you are logged out")
    assert len(saved_spans(sample, alice)) == 1

    # Log in again as the same person in another tab of the same browser, then Retry here.
    second = page.context.new_page()
    log_in(second, alice)
    page.bring_to_front()
    page.locator('[data-role="span-list"] [data-role="retry"]').click()

    spans = eventually(lambda: len(saved_spans(sample, alice)) == 2 and saved_spans(sample, alice))
    assert spans, "the retried span was saved"
    assert [(span.text, span.note) for span in spans] == [
        ("nine weeks", ""),
        ("national government", "typed after the session ended"),
    ]
    expect(page.locator(STATUS)).to_have_text("Saved")
    expect(page.locator(BANNER)).to_be_hidden()
    expect(page.locator('[data-role="retry-all"]')).to_be_hidden()


def test_a_save_that_waits_for_the_login_goes_with_the_next_one_that_succeeds_and_retry_all_sends_the_rest(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    end_the_session_with_a_saved_span(page, live_server, log_in, alice, sample)
    label_words(page, sample, "national government", "2")
    label_words(page, sample, "Lintown's", "3")
    expect(page.locator(FAILED)).to_have_count(2)
    retry_all = page.locator('[data-role="retry-all"]')
    expect(retry_all).to_be_visible()

    second = page.context.new_page()
    log_in(second, alice)
    page.bring_to_front()
    retry_all.click()

    assert eventually(lambda: len(saved_spans(sample, alice)) == 3)
    expect(page.locator("[data-span-id]")).to_have_count(3)
    expect(page.locator(FAILED)).to_have_count(0)
    expect(retry_all).to_be_hidden()


def test_retry_after_another_user_logged_in_is_refused_and_nothing_is_saved_as_them(
    page: Page, live_server: Any, log_in: Any, alice: Any, bob: Any, sample: Sample
) -> None:
    end_the_session_with_a_saved_span(page, live_server, log_in, alice, sample)
    label_words(page, sample, "national government", "2")
    expect(page.locator(FAILED)).to_contain_text("you are logged out")

    second = page.context.new_page()
    log_in(second, bob)
    page.bring_to_front()
    page.locator('[data-role="span-list"] [data-role="retry"]').click()

    expect(page.locator(BANNER)).to_contain_text("This page was opened as alice, but this browser is now logged in as bob")
    expect(page.locator(FAILED)).to_contain_text("another user has logged in in this browser: log in as alice again")
    expect(page.locator(STATUS)).to_have_attribute("data-state", "failed")
    time.sleep(0.5)
    assert not SpanAnnotation.objects.filter(annotator=bob).exists()
    assert [span.text for span in saved_spans(sample, alice)] == ["nine weeks"]


def test_selecting_words_after_the_session_ended_says_why_nothing_is_shaded(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    Session.objects.all().delete()

    select_words(page, "summary", sample.summary, "nine weeks")

    refused = page.locator('[data-role="similarity-refused"]')
    expect(refused).to_contain_text("no shading: you are logged out")
    expect(page.locator(BANNER)).to_contain_text("You are logged out")
    assert page.locator('[data-role="source"] [data-similarity]').count() == 0


def test_saves_made_while_the_server_is_away_for_nine_seconds_go_through_on_their_own_once(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    """The page used to give up after 7.5 s of tries; then each span needed its own Retry press."""
    log_in(page, alice)
    open_sample(page, live_server, sample)
    back_at = time.monotonic() + 9.0
    tries = {"refused": 0}

    def server_away(route: Route) -> None:
        if time.monotonic() < back_at:
            tries["refused"] += 1
            route.abort("connectionrefused")
        else:
            route.continue_()

    page.route("**/api/**", server_away)
    label_words(page, sample, "nine weeks", "1")
    label_words(page, sample, "national government", "2")
    page.keyboard.press("E")
    page.keyboard.type("written while the server was away")
    page.keyboard.press("Escape")
    expect(page.locator(STATUS)).to_have_text("Failed — retrying")

    # Playwright runs the route handler only while the test waits in Playwright: wait there, not in time.sleep.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (eventually(lambda: len(saved_spans(sample, alice)) == 2, 0)
                                               and saved_spans(sample, alice)[1].note):
        page.wait_for_timeout(200)
    spans = saved_spans(sample, alice)
    assert len(spans) == 2, "both spans were saved without a Retry press"
    assert [(span.text, span.note) for span in spans] == [
        ("nine weeks", ""),
        ("national government", "written while the server was away"),
    ]
    assert tries["refused"] > 2
    expect(page.locator(STATUS)).to_have_text("Saved")
    expect(page.locator(FAILED)).to_have_count(0)
    assert SpanAnnotation.objects.filter(annotator=alice).count() == 2  # nothing saved twice


def test_a_note_thrown_away_by_a_newer_version_from_another_tab_is_kept_to_use_again(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"], note="first thought")
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.click(f'[data-span-id="{span.pk}"]')
    # Another tab saves a newer note (tried again while the server's thread holds the test database's lock).
    assert eventually(lambda: SpanAnnotation.objects.filter(pk=span.pk).update(note="newer note from the other tab",
                                                                                 version=2))

    page.locator('[data-role="note"]').fill("my stale-tab note")

    expect(page.locator('[data-role="notice"]')).to_contain_text("Your note was not saved")
    expect(page.locator('[data-role="note"]')).to_have_value("newer note from the other tab")
    kept = page.locator('[data-role="discarded-note"]')
    expect(kept).to_be_visible()
    expect(kept.locator('[data-role="discarded-text"]')).to_have_text("my stale-tab note")

    kept.locator('[data-role="use-discarded"]').click()
    expect(page.locator('[data-role="note"]')).to_have_value("my stale-tab note")
    expect(kept).to_be_hidden()
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).note == "my stale-tab note")
    assert SpanAnnotation.objects.get(pk=span.pk).version == 3


def test_a_change_whose_answer_was_lost_is_not_taken_for_another_tabs_on_its_retry(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    """The server took the note, its answer never came back, and the retry (on the old version) is answered 409 with
    the stored span, which is this very note: nothing was changed elsewhere, so the page says nothing of another tab."""
    span = make_span(sample, alice, "nine weeks", ["Unwanted", "Unwanted.Intrinsic"])
    log_in(page, alice)
    open_sample(page, live_server, sample)
    patches: list[int] = []

    def lose_the_first_answer(route: Route) -> None:
        if route.request.method != "PATCH":
            route.continue_()
            return
        reply = route.fetch()
        patches.append(reply.status)
        if len(patches) == 1:
            route.abort("connectionreset")  # stored on the server; the page never hears back
        else:
            route.fulfill(response=reply)

    page.route("**/api/spans/*/", lose_the_first_answer)
    page.click(f'[data-span-id="{span.pk}"]')
    page.locator('[data-role="note"]').fill("eight weeks in the source")

    expect(page.locator(STATUS)).to_have_text("Saved", timeout=10_000)
    assert patches == [200, 409]
    expect(page.locator('[data-role="notice"]')).to_be_hidden()
    expect(page.locator('[data-role="discarded-note"]')).to_be_hidden()
    expect(page.locator('[data-role="note"]')).to_have_value("eight weeks in the source")
    stored = SpanAnnotation.objects.get(pk=span.pk)
    assert (stored.note, stored.version) == ("eight weeks in the source", 2)

    page.unroute("**/api/spans/*/")
    page.locator('[data-role="note"]').fill("eight weeks, says the source")  # the page holds version 2 now
    assert eventually(lambda: SpanAnnotation.objects.get(pk=span.pk).note == "eight weeks, says the source")
