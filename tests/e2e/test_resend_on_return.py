"""What a labeling page does with work the network or the login session kept from the server, the same on the span,
pair and audit pages (static/annotate/http.js):

- A brief network drop: the pair page's answer and the audit page's verdict are tried again for about 45 s (the
  status saying "Failed — retrying") and go through by themselves once the connection is back; the pair page gave up
  after 7.5 s and the audit page at once ("press Enter to try again"). A second key on the pair page meanwhile says the
  answer is still being saved, not "Too fast".
- Logged out, then logged in again in another tab: coming back to the page (the window gets the focus, or the tab
  is shown again) sends what waits at once, on each page; the span page used to wait up to 30 s, the pair and audit
  pages for the next key."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.sessions.models import Session
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import PairItem, Sample
from judging.models import Audit
from tests.e2e.annotation_helpers import eventually, open_sample, saved_spans, select_words
from tests.e2e.audit_page_helpers import shown
from tests.e2e.test_pairs_labeling import judgement, open_labeling, pairs_project, shown_item, text_items
from tests.judging.audit_helpers import AuditScene, build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

__all__ = ["pairs_project", "text_items"]  # fixtures, imported for this module's tests

STATUS = '[data-role="save-status"]'
# Longer than the 7.5 s of tries the pair page used to make, well inside the 45 s it makes now.
OFFLINE_S = 9
# Coming back to the page: the window gets the focus (a headless browser fires no such event by itself).
COME_BACK = "() => window.dispatchEvent(new Event('focus'))"


@pytest.fixture
def scene(project: Any, batch: Any) -> AuditScene:
    return build_scene(project, batch)


def log_in_again_elsewhere(page: Page, log_in: Any, user: Any) -> None:
    other_tab = page.context.new_page()
    log_in(other_tab, user)
    other_tab.close()


def test_pairs_an_answer_waits_out_a_network_drop_and_goes_through_by_itself(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, _ = text_items
    log_in(page, alice)
    open_labeling(page, live_server, date.project)
    shown_item(page, date)

    page.context.set_offline(True)
    page.keyboard.press("h")
    expect(page.locator(STATUS)).to_have_attribute("data-state", "retrying")
    page.keyboard.press("n")  # a second key while the first answer is on its way
    too_fast = page.locator('[data-role="too-fast"]')
    expect(too_fast).to_contain_text("Still saving")
    expect(too_fast).not_to_contain_text("Too fast")
    page.wait_for_timeout(OFFLINE_S * 1000)
    expect(page.locator(STATUS)).to_have_attribute("data-state", "retrying")  # still trying, not given up

    page.context.set_offline(False)
    shown_item(page, name)
    assert judgement(date, alice).label == "H"
    expect(page.locator(STATUS)).to_have_attribute("data-state", "saved")


def test_audit_a_verdict_waits_out_a_network_drop_and_goes_through_by_itself(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[scene.project.slug]))
    shown(page, scene.queue_order[0])
    page.keyboard.press("4")

    page.context.set_offline(True)
    page.keyboard.press("Enter")
    expect(page.locator(STATUS)).to_have_attribute("data-state", "retrying")
    page.wait_for_timeout(2000)
    expect(page.locator(STATUS)).to_have_attribute("data-state", "retrying")

    page.context.set_offline(False)
    shown(page, scene.queue_order[1])
    saved = Audit.objects.get(auditor=scene.auditor, item=scene.queue_order[0])
    assert saved.score == 4
    expect(page.locator(STATUS)).to_have_attribute("data-state", "saved")


def test_span_page_a_span_refused_while_logged_out_saves_on_coming_back_after_logging_in_again(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    Session.objects.all().delete()
    select_words(page, "summary", sample.summary, "nine weeks")
    page.keyboard.press("1")
    expect(page.locator(STATUS)).to_contain_text("logged out")

    log_in_again_elsewhere(page, log_in, alice)
    page.evaluate(COME_BACK)

    expect(page.locator(STATUS)).to_have_attribute("data-state", "saved", timeout=8000)
    assert [span.text for span in eventually(lambda: saved_spans(sample, alice))] == ["nine weeks"]


def test_pairs_an_answer_refused_while_logged_out_saves_on_coming_back_after_logging_in_again(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, _ = text_items
    log_in(page, alice)
    open_labeling(page, live_server, date.project)
    shown_item(page, date)
    Session.objects.all().delete()
    page.keyboard.press("h")
    expect(page.locator(STATUS)).to_contain_text("logged out")

    log_in_again_elsewhere(page, log_in, alice)
    page.evaluate(COME_BACK)

    shown_item(page, name, answerable=False)
    assert judgement(date, alice).label == "H"


def test_audit_a_verdict_refused_while_logged_out_saves_on_coming_back_after_logging_in_again(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[scene.project.slug]))
    shown(page, scene.queue_order[0])
    page.keyboard.press("4")
    Session.objects.all().delete()
    page.keyboard.press("Enter")
    expect(page.locator(STATUS)).to_contain_text("logged out")

    log_in_again_elsewhere(page, log_in, scene.auditor)
    page.evaluate(COME_BACK)

    shown(page, scene.queue_order[1])
    assert Audit.objects.get(auditor=scene.auditor, item=scene.queue_order[0]).score == 4
