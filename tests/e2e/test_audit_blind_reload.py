"""Blind mode switched on with b is still on after a reload, even one sent before the switch's answer came back,
and an unscored item shown blind stays blind across reloads.

The reload is made to land while the switch is being answered: the switch's request is held in the server (in
its serve of the item, after it has read and changed the choice) until the reloaded page is in. It used to be
saved only once its answer was ready, and the reload, having read the old choice, wrote it back."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from judging.services import audits
from tests.judging.audit_helpers import build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


class HeldServe:
    """Holds the first serve of the item after it is armed (the switch's) until released; the others pass."""

    def __init__(self, serve: Callable[..., Any]) -> None:
        self.serve = serve
        self.armed = False
        self.reached = threading.Event()
        self.release = threading.Event()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    def __call__(self, project: Any, auditor: Any, **options: Any) -> Any:  # options: the queue order
        with self.lock:
            hold, self.armed = self.armed, False
        if hold:
            self.thread = threading.current_thread()
            self.reached.set()
            self.release.wait(20)
        return self.serve(project, auditor, **options)

    def let_go(self) -> None:
        """Release the held request and wait until it has answered (its session saved)."""
        self.release.set()
        if self.thread is not None:
            self.thread.join(20)


def reload_page(page: Page) -> None:
    page.reload()
    expect(page.locator("#auditor.ready")).to_be_attached()


def test_b_then_a_reload_at_once_keeps_blind_mode_and_the_next_item_stays_blind_after_reloads(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch, monkeypatch: pytest.MonkeyPatch
) -> None:
    scene = build_scene(project, batch)
    first, second, _ = scene.queue_order
    held = HeldServe(audits.serve_next_audit)
    monkeypatch.setattr(audits, "serve_next_audit", held)
    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[project.slug]))
    expect(page.locator("#auditor.ready")).to_be_attached()
    view = page.locator("#audit-view")
    expect(view).to_have_attribute("data-item-id", str(first.pk))
    expect(view).to_have_attribute("data-blind", "off")

    held.armed = True
    try:
        page.keyboard.press("b")
        assert held.reached.wait(15), "the blind switch never reached the server"
        reload_page(page)  # while the switch's answer is still being made
        expect(view).to_have_attribute("data-blind", "on")
        expect(page.locator('[data-role="blind-toggle"]')).to_contain_text("Blind mode: on")
    finally:
        held.let_go()

    # Once the switch has answered too, blind mode is still on; this item's judges were shown before, so they stay.
    reload_page(page)
    expect(view).to_have_attribute("data-blind", "on")
    expect(view).to_have_attribute("data-state", "open")

    page.keyboard.press("3")
    page.keyboard.press("Enter")
    expect(view).to_have_attribute("data-item-id", str(second.pk))
    expect(view).to_have_attribute("data-state", "blind")
    for _ in range(2):
        reload_page(page)
        expect(view).to_have_attribute("data-item-id", str(second.pk))
        expect(view).to_have_attribute("data-blind", "on")
        expect(view).to_have_attribute("data-state", "blind")
        expect(page.locator('[data-role="judges-hidden"]')).to_be_visible()
        expect(page.locator('[data-role="judge-score"]')).to_have_count(0)
        expect(page.locator('[data-role="judge-reasoning"]')).to_have_count(0)
