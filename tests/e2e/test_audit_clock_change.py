"""The audit page's item clock after changing a saved verdict: the minutes spent on the change page are not added
to the item the auditor comes back to, whether they save the change or leave it with Esc, and the verdict then
records the time the clock showed. The server's clock (judging.services.audits.clock) is moved by hand, so the
ten minutes "spent" changing take no time; the page's own ticking adds at most the test's few real seconds."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from annotate.models import Batch, Project
from judging.models import Audit, AuditItem
from judging.services import audits
from tests.e2e.audit_page_helpers import keys_ready, open_audit
from tests.judging.audit_helpers import Clock, build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

ITEM_CLOCK = '[data-role="item-clock"]'


def shows(view: Locator, item: AuditItem, state: str) -> None:
    """Wait for ``item`` in ``state``, settled by htmx."""
    expect(view).to_have_attribute("data-item-id", str(item.pk))
    expect(view).to_have_attribute("data-state", state)
    expect(view).not_to_have_class(re.compile(r"htmx-(settling|swapping|request)"))
    keys_ready(view.page)


def shown_seconds(page: Page) -> int:
    """The item clock as the page shows it ("7 s", "10 min 5 s"), in seconds."""
    text = page.locator(ITEM_CLOCK).inner_text()
    found = re.fullmatch(r"(?:(\d+) min )?(\d+) s", text.strip())
    assert found, f"item clock reads {text!r}"
    return int(found.group(1) or 0) * 60 + int(found.group(2))


def test_the_item_clock_after_changing_a_saved_verdict_leaves_the_change_out(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch, monkeypatch: pytest.MonkeyPatch
) -> None:
    scene = build_scene(project, batch)
    first, second, _ = scene.queue_order
    clock = Clock()
    monkeypatch.setattr(audits.clock, "now", clock)
    log_in(page, scene.auditor)
    open_audit(page, live_server, project)
    view = page.locator("#audit-view")
    shows(view, first, "open")
    clock.advance(8)
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    shows(view, second, "open")  # served now, on the server's clock
    clock.advance(5)  # five seconds on the second item, then back to the first verdict

    page.keyboard.press("u")
    shows(view, first, "change")
    clock.advance(600)  # ten minutes changing it
    page.keyboard.press("4")
    page.keyboard.press("Enter")
    shows(view, second, "open")
    expect(page.locator('[data-role="item-time"]')).to_have_attribute("data-elapsed", "5.0")
    assert shown_seconds(page) < 60  # "10 min 5 s" before: the change was charged to this item

    page.keyboard.press("u")  # again, and this time left as it is
    shows(view, first, "change")
    clock.advance(300)
    page.keyboard.press("Escape")
    shows(view, second, "open")
    expect(page.locator('[data-role="item-time"]')).to_have_attribute("data-elapsed", "5.0")
    assert shown_seconds(page) < 60

    clock.advance(2)
    page.keyboard.press("3")
    page.keyboard.press("Enter")
    expect(view).not_to_have_attribute("data-item-id", str(second.pk))
    expect(page.locator('[data-role="last-saved"]')).to_have_attribute("data-seconds", "7.0")
    assert Audit.objects.get(item=second, auditor=scene.auditor).seconds == 7.0
    changed = Audit.objects.get(item=first, auditor=scene.auditor)
    assert (changed.score, changed.seconds) == (4, 8.0)  # the changed verdict keeps its first answer's time
