"""The audit page when its login session ends or changes while a verdict waits on screen (config/session_guard.py,
static/js/session.js, static/judging/audit/htmx.js).

- The session ended: Enter saves nothing and swaps nothing in (the login page used to replace the item, and the
  verdict kept for a reload was dropped); the banner and the save status say "logged out", never "check your
  connection"; the score, the reasoning mark and the note stay on screen and in sessionStorage; once logged in
  again in another tab, Enter saves them (the form's own CSRF token, printed before that login, no longer counts).
- Another user logged in in another tab: refused with the other_user message, nothing saved under anyone's name;
  the verdict is kept per user, so that working as the other user meanwhile (the banner's Reload) does not drop it.
- The security token refused (the csrftoken cookie gone): the status says the session changed and to reload, and the
  reload brings the verdict back."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.sessions.models import Session
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from judging.models import Audit
from tests.e2e.audit_page_helpers import shown
from tests.judging.audit_helpers import AuditScene, build_scene, make_auditor

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

STATUS = '[data-role="save-status"]'
BANNER = '[data-role="session-banner"]'
WRONG = '[data-role="reasoning-wrong"]'
NOTE = '[data-role="note"]'
NOTE_TEXT = "the judge ignored the date"
KEPT = "() => sessionStorage.getItem(`faithlab:audit-choice:${document.body.dataset.user}:${location.pathname}`)"


@pytest.fixture
def scene(project: Project, batch: Batch) -> AuditScene:
    return build_scene(project, batch)


def choose_verdict(page: Page, live_server: Any, log_in: Any, scene: AuditScene) -> None:
    """Open the page as the scene's auditor and choose 4, reasoning wrong and a note, unsaved."""
    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[scene.project.slug]))
    expect(page.locator("#auditor.ready")).to_be_attached()
    shown(page, scene.queue_order[0])
    page.keyboard.press("4")
    page.keyboard.press("w")
    page.keyboard.press("n")
    page.keyboard.type(NOTE_TEXT)
    page.keyboard.press("Escape")  # out of the note: Enter saves


def verdict_still_there(page: Page, scene: AuditScene) -> None:
    """The chosen verdict is on screen, on the same item, and kept for a reload."""
    shown(page, scene.queue_order[0])
    expect(page.locator('[data-role="audit-form"] [data-score="4"]')).to_have_attribute("aria-pressed", "true")
    expect(page.locator(WRONG)).to_be_checked()
    expect(page.locator(NOTE)).to_have_value(NOTE_TEXT)
    kept = json.loads(page.evaluate(KEPT) or "null")
    assert kept is not None, "the verdict kept for a reload was dropped"
    assert (kept["item"], kept["score"], kept["reasoningWrong"], kept["note"]) == (
        str(scene.queue_order[0].pk), "4", True, NOTE_TEXT)


def status_says(page: Page, words: str, title: str) -> None:
    """The save status says ``words`` (a few: it holds about 30 characters) and its title ``title``, never
    "check your connection"."""
    status = page.locator(STATUS)
    expect(status).to_have_attribute("data-state", "failed")
    expect(status).to_have_text(f"Failed: {words}")
    expect(status).to_have_attribute("title", re.compile(re.escape(title)))
    assert "connection" not in (status.get_attribute("title") or "")
    assert status.evaluate("(el) => el.scrollWidth <= el.clientWidth"), "the status is cut short"


def answered() -> int:
    return Audit.objects.filter(answered_at__isnull=False).count()


def test_after_the_session_ended_enter_keeps_the_verdict_and_saves_it_once_logged_in_again(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    choose_verdict(page, live_server, log_in, scene)
    Session.objects.all().delete()  # the session expired on the server

    page.keyboard.press("Enter")

    status_says(page, "logged out", "log in again in another tab, then press Enter")
    expect(page.locator(BANNER)).to_be_visible()
    expect(page.locator(BANNER)).to_contain_text("logged out")
    expect(page.locator("#auditor input[name=username]")).to_have_count(0)  # no login form swapped into the page
    verdict_still_there(page, scene)
    assert answered() == 0

    # Logged in again in another tab: the cookie's CSRF token is a new one, the form's is not.
    other_tab = page.context.new_page()
    log_in(other_tab, scene.auditor)
    other_tab.close()
    page.keyboard.press("Enter")

    shown(page, scene.queue_order[1])
    saved = Audit.objects.get(auditor=scene.auditor, item=scene.queue_order[0])
    assert (saved.score, saved.reasoning_wrong, saved.note) == (4, True, NOTE_TEXT)
    expect(page.locator(STATUS)).to_have_attribute("data-state", "saved")
    expect(page.locator(BANNER)).to_be_hidden()


def test_after_another_user_logged_in_enter_is_refused_and_nothing_is_saved(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    hedy = make_auditor(scene.project, "hedy")
    choose_verdict(page, live_server, log_in, scene)
    other_tab = page.context.new_page()
    log_in(other_tab, hedy)  # the browser's session is hedy's now

    page.keyboard.press("Enter")

    status_says(page, "another user logged in", "opened as grace, but this browser is now logged in as hedy")
    expect(page.locator(BANNER)).to_be_visible()
    expect(page.locator(BANNER)).to_contain_text("opened as grace")
    expect(page.locator(BANNER)).to_contain_text("logged in as hedy")
    verdict_still_there(page, scene)
    page.wait_for_timeout(300)
    assert answered() == 0
    assert not Audit.objects.filter(auditor=hedy).exists()  # nothing served or saved in hedy's name either

    # grace logs in again over there: the same Enter saves her verdict, as hers.
    log_in(other_tab, scene.auditor)
    other_tab.close()
    page.keyboard.press("Enter")
    shown(page, scene.queue_order[1])
    saved = Audit.objects.get(item=scene.queue_order[0], answered_at__isnull=False)
    assert (saved.auditor, saved.score, saved.note) == (scene.auditor, 4, NOTE_TEXT)


def test_working_as_the_other_user_meanwhile_keeps_the_first_users_verdict_for_when_they_are_back(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    hedy = make_auditor(scene.project, "hedy")
    choose_verdict(page, live_server, log_in, scene)
    log_in(page.context.new_page(), hedy)
    page.keyboard.press("Enter")
    status_says(page, "another user logged in", "reload to work as hedy")

    # The banner's Reload: the page is hedy's now, with an item of her own; grace's kept verdict is left alone.
    page.locator(BANNER).get_by_role("link", name="Reload").click()
    expect(page.locator("#auditor.ready")).to_be_attached()
    shown(page, scene.queue_order[1])
    expect(page.locator('[data-role="audit-form"] [aria-pressed="true"]')).to_have_count(0)

    # grace logs in again in this tab: her item comes back with her verdict, which Enter saves.
    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[scene.project.slug]))
    expect(page.locator("#auditor.ready")).to_be_attached()
    verdict_still_there(page, scene)
    expect(page.locator('[data-role="hint"]')).to_contain_text("Your unsaved choice for this output is back")
    page.keyboard.press("Enter")
    shown(page, scene.queue_order[2])  # hedy holds the second
    saved = Audit.objects.get(item=scene.queue_order[0], answered_at__isnull=False)
    assert (saved.auditor, saved.score, saved.reasoning_wrong, saved.note) == (scene.auditor, 4, True, NOTE_TEXT)
    assert not Audit.objects.filter(auditor=hedy, answered_at__isnull=False).exists()


def test_a_refused_security_token_says_the_session_changed_and_a_reload_brings_the_verdict_back(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    choose_verdict(page, live_server, log_in, scene)
    page.context.clear_cookies(name="csrftoken")

    page.keyboard.press("Enter")

    status_says(page, "session changed: reload", "Reload the page (your choice comes back), then press Enter")
    error = page.locator('[data-role="messages"] [data-role="error"]')
    expect(error).to_contain_text("Not saved: the login session changed")
    expect(error).to_contain_text("Reload the page (your choice comes back), then press Enter.")
    verdict_still_there(page, scene)
    assert answered() == 0

    page.reload()
    expect(page.locator("#auditor.ready")).to_be_attached()
    verdict_still_there(page, scene)
    page.keyboard.press("Enter")
    shown(page, scene.queue_order[1])
    saved = Audit.objects.get(auditor=scene.auditor, item=scene.queue_order[0])
    assert (saved.score, saved.reasoning_wrong, saved.note) == (4, True, NOTE_TEXT)
