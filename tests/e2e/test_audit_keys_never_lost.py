"""No key pressed on the audit page is lost without a word: it counts, or the page says why it did not.

The first a after the blind swap in test_audit_messages.py went unanswered now and then. Its cause: htmx wires the
forms of swapped-in content only when the swap settles (its settle delay, 20 ms after the swap). 3 and Enter pressed
in that moment, right after b had swapped the view, sent the verdict form htmx did not know yet as a plain POST: the
whole page reloaded (its redirect back to the audit page), and the a pressed while that page loaded reached no
listener, since the page's keys are wired by a module that runs only once the page is parsed. Now the swapped view's
forms are wired at the swap (audit/htmx.js), and a key pressed before the page is ready is answered once it is
(audit/early.js). htmx's settle delay is widened here so that the moment is there every run, not one in four.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, Route, expect

from annotate.models import Batch, Project
from judging.models import Audit
from tests.e2e.audit_page_helpers import open_audit, shown
from tests.judging.audit_helpers import AuditScene, build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

HINT = '[data-role="hint"]'


@pytest.fixture
def scene(project: Project, batch: Batch) -> AuditScene:
    return build_scene(project, batch)


def test_keys_pressed_while_a_swap_settles_go_through_htmx_not_a_page_reload(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    first, second, _ = scene.queue_order
    log_in(page, scene.auditor)
    open_audit(page, live_server, scene.project)
    shown(page, first)
    # htmx's settle delay, 20 ms, made 1.5 s: the keys below land inside it every time. A reload would forget the mark.
    page.evaluate("htmx.config.defaultSettleDelay = 1500; window.samePage = true")

    page.keyboard.press("b")  # the same output swapped in again, its judges shown already: its keys are not held
    expect(page.locator('[data-role="notice"]')).to_contain_text("Blind mode is on")
    expect(page.locator("#audit-view")).to_have_class(re.compile(r"\bhtmx-settling\b"))  # htmx still settling the swap
    page.keyboard.press("3")
    page.keyboard.press("Enter")

    expect(page.locator("#audit-view")).to_have_attribute("data-item-id", str(second.pk))
    expect(page.locator("#audit-view")).to_have_attribute("data-state", "blind")
    assert page.evaluate("window.samePage") is True, "the verdict was posted without htmx: the whole page reloaded"
    saved = Audit.objects.get(item=first, auditor=scene.auditor)
    assert (saved.score, saved.answered_at is not None) == (3, True)


def test_a_key_pressed_while_the_page_loads_is_answered_once_it_is_ready(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    first = scene.queue_order[0]
    log_in(page, scene.auditor)

    def slow_main(route: Route) -> None:
        # The page's keys are wired by main.js: held back 1.5 s here, as a slow network or a busy machine would.
        body = route.fetch().text()
        route.fulfill(body="await new Promise((resolve) => setTimeout(resolve, 1500));\n" + body,
                      content_type="text/javascript")

    page.route("**/judging/audit/main*.js", slow_main)
    page.goto(live_server.url + reverse("judging-audit", args=[scene.project.slug]), wait_until="commit")
    expect(page.locator("#audit-view")).to_have_attribute("data-item-id", str(first.pk))
    assert page.evaluate("document.getElementById('auditor').classList.contains('ready')") is False
    page.keyboard.press("a")
    page.keyboard.press("Enter")

    expect(page.locator("#auditor.ready")).to_be_attached()
    expect(page.locator(HINT)).to_be_visible()
    expect(page.locator(HINT)).to_have_text(
        "Not taken: the page was still loading when you pressed a, Enter. Press them again."
    )
    assert not Audit.objects.filter(item=first, answered_at__isnull=False).exists()

    # Once ready, the keys work as ever.
    page.keyboard.press("a")
    expect(page.locator('[data-role="agree"]')).to_have_attribute("aria-pressed", "true")
