"""Blind mode's "4 then Enter": the score key sends the score to reveal the judges; an Enter pressed while that
answer is on its way saves the verdict once it is in (once, however often Enter was pressed), and saves nothing
when the reveal fails (once its tries are spent).

The reveal request is held by the browser (page.route) until the test lets it go, so Enter surely lands while it
is in flight, whatever the machine's speed."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, Request, Route, expect

from annotate.models import Batch, Project
from judging.models import Audit
from tests.judging.audit_helpers import AuditScene, build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

HINT = '[data-role="hint"]'


class HeldReveals:
    """Reveal requests held until released, and every verdict the page sends."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.held: list[Route] = []
        self.verdicts: list[str] = []
        page.route("**/reveal/", self._hold)
        page.on("request", self._seen)

    def _hold(self, route: Route) -> None:
        self.held.append(route)

    def _seen(self, request: Request) -> None:
        if request.method == "POST" and request.url.endswith("/submit/"):
            self.verdicts.append(request.url)

    def wait_for_one(self) -> Route:
        """The reveal the page sent; Playwright hands it over while the test waits (up to 15 s: a loaded machine)."""
        for _ in range(600):
            if self.held:
                return self.held.pop()
            self.page.wait_for_timeout(25)
        # What the page showed instead, so that a miss on a loaded machine says where the key went.
        seen = self.page.evaluate(
            """() => ({hint: document.querySelector('[data-role="hint"]')?.textContent?.trim(),
                       state: document.querySelector('#audit-view')?.dataset.state,
                       settling: document.querySelector('#auditor')?.dataset.settling ?? null,
                       focused: document.activeElement?.outerHTML?.slice(0, 120)})"""
        )
        raise AssertionError(f"the score key sent no reveal request; the page showed {seen}")


def open_blind(page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch) -> AuditScene:
    scene = build_scene(project, batch, blind=True)
    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[project.slug]))
    expect(page.locator("#auditor.ready")).to_be_attached()
    expect(page.locator("#audit-view")).to_have_attribute("data-state", "blind")
    return scene


def test_enter_pressed_while_the_reveal_is_on_its_way_saves_the_blind_score_once(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = open_blind(page, live_server, log_in, project, batch)
    first, second, _ = scene.queue_order
    held = HeldReveals(page)
    view = page.locator("#audit-view")

    page.keyboard.press("4")
    reveal = held.wait_for_one()
    page.keyboard.press("Enter")
    page.keyboard.press("Enter")  # pressed again, as one does when nothing seems to happen: still one verdict
    expect(page.locator(HINT)).to_contain_text("Saving once the judges' answers are in")
    assert held.verdicts == []  # nothing is sent before the judges' answers are in
    reveal.continue_()

    expect(view).to_have_attribute("data-item-id", str(second.pk))
    expect(page.locator('[data-role="last-saved"]')).to_contain_text("Saved: score 4, given blind")
    expect(view).to_have_attribute("data-state", "blind")  # the next output, its judges hidden in turn
    assert len(held.verdicts) == 1
    audit = Audit.objects.get(item=first, auditor=scene.auditor)
    assert (audit.score, audit.blind, audit.agreed) == (4, True, False)
    assert not Audit.objects.filter(auditor=scene.auditor, answered_at__isnull=False).exclude(item=first).exists()


def test_enter_saves_nothing_when_the_reveal_fails(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    # A reveal lost on the network is tried again for about 45 s (static/judging/audit/resend.js): the page's clock
    # is moved on past those tries, each of them lost too.
    page.clock.install()
    scene = open_blind(page, live_server, log_in, project, batch)
    first, _, _ = scene.queue_order
    held = HeldReveals(page)
    view = page.locator("#audit-view")

    page.keyboard.press("4")
    reveal = held.wait_for_one()
    page.keyboard.press("Enter")
    reveal.abort()
    for _ in range(300):  # each try lost in turn, the clock moved on to the next, until the page gives up
        if "Nothing saved" in (page.locator(HINT).text_content() or ""):
            break
        if held.held:
            held.held.pop().abort()
        page.clock.fast_forward(1000)
        page.wait_for_timeout(25)

    expect(page.locator(HINT)).to_contain_text("Nothing saved")
    expect(page.locator('[data-role="save-status"]')).to_have_attribute("data-state", "failed")
    expect(view).to_have_attribute("data-item-id", str(first.pk))
    expect(view).to_have_attribute("data-state", "blind")
    assert held.verdicts == []
    assert not Audit.objects.filter(auditor=scene.auditor, answered_at__isnull=False).exists()
