"""[ and ] (and p, n) leave a sample as D does: only once its spans are saved. Logged out, a span whose save was
refused keeps the annotator on the sample with a notice, as D does (] used to leave, and the browser's "Leave site?"
dialog then lost the span). With the connection down, the page says it waits for the saves, and going on working
meanwhile (typing a note) keeps it on the sample: it used to jump to the next sample when the connection came back,
under the note being typed."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.sessions.models import Session
from playwright.sync_api import Dialog, Page, expect

from tests.e2e.annotation_helpers import eventually, open_sample, saved_spans, select_words

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

NOTICE = '[data-role="notice"]'
STATUS = '[data-role="save-status"]'


def record_dialogs(page: Page) -> list[str]:
    seen: list[str] = []

    def dismiss(dialog: Dialog) -> None:
        seen.append(dialog.type)
        dialog.dismiss()

    page.on("dialog", dismiss)
    return seen


@pytest.mark.parametrize("key", ["]", "[", "n"])
def test_logged_out_a_sample_key_keeps_the_unsaved_span_and_says_so_as_d_does(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any, key: str
) -> None:
    sample = batch.samples.order_by("position")[1]  # a sample with one before it and one after
    log_in(page, alice)
    open_sample(page, live_server, sample)
    dialogs = record_dialogs(page)
    Session.objects.all().delete()
    select_words(page, "summary", sample.summary, sample.summary.split()[1])
    page.keyboard.press("1")
    expect(page.locator(STATUS)).to_contain_text("logged out")

    url = page.url
    page.keyboard.press(key)

    expect(page.locator(NOTICE)).to_contain_text("Some spans are not saved yet")
    page.wait_for_timeout(500)
    assert page.url == url
    assert dialogs == []
    expect(page.locator('[data-role="span-list"] .span-state.failed')).to_have_count(1)


def test_offline_the_page_waits_to_move_on_and_typing_a_note_meanwhile_keeps_it_on_the_sample(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any
) -> None:
    sample = batch.samples.order_by("position")[0]
    log_in(page, alice)
    open_sample(page, live_server, sample)
    dialogs = record_dialogs(page)
    url = page.url

    page.context.set_offline(True)
    select_words(page, "summary", sample.summary, "nine weeks")
    page.keyboard.press("2")
    expect(page.locator(STATUS)).to_have_attribute("data-state", "retrying")
    page.keyboard.press("]")
    expect(page.locator(NOTICE)).to_contain_text("Saving before moving on")

    page.keyboard.press("e")
    page.keyboard.type("typed while the page waited")
    page.context.set_offline(False)

    expect(page.locator(STATUS)).to_have_attribute("data-state", "saved", timeout=10_000)
    page.wait_for_timeout(1000)
    assert page.url == url
    assert dialogs == []
    spans = eventually(lambda: [span for span in saved_spans(sample, alice) if span.note])
    assert [(span.text, span.note) for span in spans] == [("nine weeks", "typed while the page waited")]
