"""The audit page after a wrong Enter: u brings the verdict just saved back with everything it held, the auditor
changes it and saves again (one row, the new verdict); u again steps back one saved item at a time, Esc returns
to the current item. A blind score survives a change of mind. A key pressed while a verdict is being saved does
nothing and says so. A score chosen and not saved yet survives a reload."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from annotate.models import Batch, Project
from judging.models import Audit, AuditItem
from judging.services import audits
from tests.e2e.audit_page_helpers import keys_ready, open_audit
from tests.judging.audit_helpers import build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

VIEW = "#audit-view"
HINT = '[data-role="hint"]'


def open_page(page: Page, live_server: Any, log_in: Any, project: Project, auditor: Any) -> Locator:
    log_in(page, auditor)
    open_audit(page, live_server, project)
    return page.locator(VIEW)


def shows(view: Locator, item: AuditItem, state: str) -> None:
    """Wait for ``item`` in ``state`` and for htmx to have settled it (its forms are htmx's only then)."""
    expect(view).to_have_attribute("data-item-id", str(item.pk))
    expect(view).to_have_attribute("data-state", state)
    expect(view).not_to_have_class(re.compile(r"htmx-(settling|swapping|request)"))
    keys_ready(view.page)


def pressed_score(page: Page) -> Locator:
    return page.locator('[data-role="audit-form"] [data-score][aria-pressed="true"]')


def answer(page: Page, view: Locator, item: AuditItem, score: str, *more_keys: str) -> None:
    shows(view, item, "open")
    page.keyboard.press(score)
    for key in more_keys:
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    expect(view).not_to_have_attribute("data-item-id", str(item.pk))


def test_u_brings_the_saved_verdict_back_and_saving_again_changes_it(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    first, second, _ = scene.queue_order
    view = open_page(page, live_server, log_in, project, scene.auditor)
    answer(page, view, first, "3", "w")
    shows(view, second, "open")
    saved = page.locator('[data-role="last-saved"]')
    expect(saved).to_contain_text("u to change it")
    seconds = Audit.objects.get(item=first, auditor=scene.auditor).seconds

    page.keyboard.press("u")
    shows(view, first, "change")
    expect(pressed_score(page)).to_have_attribute("data-score", "3")
    expect(page.locator('[data-role="reasoning-wrong"]')).to_be_checked()
    expect(page.locator('[data-role="change-banner"]')).to_contain_text("Changing your saved verdict")

    page.keyboard.press("5")
    page.keyboard.press("w")  # the reasoning was right after all
    page.keyboard.press("Enter")
    shows(view, second, "open")  # back to the item being served
    expect(saved).to_contain_text("Changed: score 5")
    rows = list(Audit.objects.filter(item=first))
    assert len(rows) == 1
    assert (rows[0].score, rows[0].reasoning_wrong, rows[0].seconds) == (5, False, seconds)
    assert rows[0].changed_at is not None
    assert Audit.objects.get(item=second, auditor=scene.auditor).answered_at is None  # still served, not answered


def test_the_change_button_does_what_u_does_for_a_touch_or_mouse(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    first, second, _ = scene.queue_order
    view = open_page(page, live_server, log_in, project, scene.auditor)
    change = page.locator('[data-role="change-saved"]')
    shows(view, first, "open")
    expect(change).to_be_hidden()  # nothing saved yet: nothing to change
    answer(page, view, first, "3", "w")
    shows(view, second, "open")
    expect(change).to_be_visible()
    change.click()
    shows(view, first, "change")
    expect(pressed_score(page)).to_have_attribute("data-score", "3")
    expect(page.locator('[data-role="reasoning-wrong"]')).to_be_checked()
    expect(page.locator('[data-role="change-banner"]')).to_contain_text("Changing your saved verdict")
    expect(change).to_be_hidden()  # no verdict saved before this one: u would only say so

    page.reload()  # the page's own item again; the verdicts saved in this tab, and the way back to them, remain
    expect(page.locator("#auditor.ready")).to_be_attached()
    shows(view, second, "open")
    expect(page.locator('[data-role="last-saved"]')).to_have_count(0)  # no saved line now: the button is the way
    change.click()
    shows(view, first, "change")
    expect(pressed_score(page)).to_have_attribute("data-score", "3")


def test_u_steps_back_two_saved_items_and_esc_returns_to_the_current_one(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    first, second, third = scene.queue_order
    view = open_page(page, live_server, log_in, project, scene.auditor)
    answer(page, view, first, "2")
    shows(view, second, "open")
    page.keyboard.press("4")
    page.keyboard.press("n")
    page.keyboard.type("dates differ")
    page.keyboard.press("Control+Enter")
    shows(view, third, "open")

    page.keyboard.press("u")
    shows(view, second, "change")
    expect(pressed_score(page)).to_have_attribute("data-score", "4")
    expect(page.locator('[data-role="note"]')).to_have_value("dates differ")
    page.keyboard.press("u")
    shows(view, first, "change")
    expect(pressed_score(page)).to_have_attribute("data-score", "2")
    page.keyboard.press("u")  # nothing saved before the first verdict: said, and the view stays
    expect(page.locator(HINT)).to_contain_text("No verdict saved before this one")
    expect(view).to_have_attribute("data-item-id", str(first.pk))

    page.keyboard.press("Escape")
    shows(view, third, "open")
    kept = {audit.item_id: (audit.score, audit.note, audit.changed_at) for audit in Audit.objects.filter(
        auditor=scene.auditor, answered_at__isnull=False)}
    assert kept == {first.pk: (2, "", None), second.pk: (4, "dates differ", None)}


def test_a_blind_score_is_kept_when_the_auditor_changes_their_mind(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch, blind=True)
    first, second, _ = scene.queue_order
    view = open_page(page, live_server, log_in, project, scene.auditor)
    shows(view, first, "blind")
    page.keyboard.press("4")  # the score given blind: it reveals the judges
    shows(view, first, "open")
    page.keyboard.press("a")  # then, the judges read, agree with the explainer's 3
    page.keyboard.press("Enter")
    shows(view, second, "blind")
    audit = Audit.objects.get(item=first, auditor=scene.auditor)
    assert (audit.score, audit.agreed, audit.blind, audit.blind_score) == (3, True, False, 4)
    expect(page.locator('[data-role="last-saved"]')).to_contain_text("4 given blind")

    # Changed again, back to the blind score: blind once more, the blind score still there.
    page.keyboard.press("u")
    shows(view, first, "change")
    expect(page.locator('[data-role="blind-score"]')).to_contain_text("given blind: 4")
    page.keyboard.press("4")
    page.keyboard.press("Enter")
    shows(view, second, "blind")
    audit.refresh_from_db()
    assert (audit.score, audit.agreed, audit.blind, audit.blind_score) == (4, False, True, 4)


class HeldSubmit:
    """Holds the next verdict in the server, once armed, until released; the others pass."""

    def __init__(self, submit: Callable[..., Any]) -> None:
        self.submit = submit
        self.armed = False
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        hold, self.armed = self.armed, False
        if hold:
            self.reached.set()
            self.release.wait(20)
        return self.submit(*args, **kwargs)


def test_a_key_pressed_while_a_verdict_saves_says_so_and_changes_nothing(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch, monkeypatch: pytest.MonkeyPatch
) -> None:
    scene = build_scene(project, batch)
    first, second, _ = scene.queue_order
    held = HeldSubmit(audits.submit_audit)
    monkeypatch.setattr(audits, "submit_audit", held)
    view = open_page(page, live_server, log_in, project, scene.auditor)
    shows(view, first, "open")
    page.keyboard.press("3")
    held.armed = True
    try:
        page.keyboard.press("Enter")
        assert held.reached.wait(15), "the verdict never reached the server"
        for key in ("5", "a", "w", "u"):
            page.keyboard.press(key)
        expect(page.locator(HINT)).to_be_visible()
        expect(page.locator(HINT)).to_have_text("Saving… press again when the next item shows.")
        # The form being saved is as it was sent.
        expect(pressed_score(page)).to_have_attribute("data-score", "3")
        expect(page.locator('[data-role="reasoning-wrong"]')).not_to_be_checked()
    finally:
        held.release.set()
    shows(view, second, "open")
    expect(pressed_score(page)).to_have_count(0)
    expect(page.locator('[data-role="score-input"]')).to_have_value("")
    expect(page.locator('[data-role="reasoning-wrong"]')).not_to_be_checked()
    expect(page.locator(HINT)).to_be_hidden()  # the cue went with the item it was about
    audit = Audit.objects.get(item=first, auditor=scene.auditor)
    assert (audit.score, audit.agreed, audit.reasoning_wrong, audit.changed_at) == (3, False, False, None)
    assert Audit.objects.get(item=second, auditor=scene.auditor).answered_at is None


def test_a_reload_keeps_the_score_chosen_and_not_saved(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    first, second, _ = scene.queue_order
    view = open_page(page, live_server, log_in, project, scene.auditor)
    shows(view, first, "open")
    page.keyboard.press("4")
    page.keyboard.press("w")
    page.reload()
    expect(page.locator("#auditor.ready")).to_be_attached()
    shows(view, first, "open")
    expect(pressed_score(page)).to_have_attribute("data-score", "4")
    expect(page.locator('[data-role="score-input"]')).to_have_value("4")
    expect(page.locator('[data-role="reasoning-wrong"]')).to_be_checked()
    expect(page.locator(HINT)).to_contain_text("unsaved choice for this output is back: score 4")
    assert not Audit.objects.filter(answered_at__isnull=False).exists()

    page.keyboard.press("Enter")
    shows(view, second, "open")
    audit = Audit.objects.get(item=first, auditor=scene.auditor)
    assert (audit.score, audit.reasoning_wrong) == (4, True)
    page.reload()  # the next item starts with nothing chosen
    expect(page.locator("#auditor.ready")).to_be_attached()
    shows(view, second, "open")
    expect(pressed_score(page)).to_have_count(0)
