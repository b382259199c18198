"""Getting back to a saved verdict once its tab is gone: in a new tab (a new browser context, its sessionStorage
empty) ``u`` has nothing to go back to and says where to look; the audit page's My audits link lists the verdict,
its Change opens it on the audit page, Enter saves the change (the blind score kept), and the list shows it changed.
And the queue order links: shuffled, then worst first again, each said on the page."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from judging.models import Audit
from tests.e2e.audit_page_helpers import keys_ready, open_audit
from tests.judging.audit_helpers import build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

VIEW = "#audit-view"


def test_a_verdict_saved_in_a_closed_tab_is_found_on_my_audits_and_changed_there(
    page: Page, new_page: Callable[..., Page], live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch, blind=True)
    first = scene.queue_order[0]
    log_in(page, scene.auditor)
    open_audit(page, live_server, project)
    view = page.locator(VIEW)
    expect(view).to_have_attribute("data-item-id", str(first.pk))
    expect(view).to_have_attribute("data-state", "blind")
    keys_ready(page)
    page.keyboard.press("2")  # blind: the score reveals the judges
    expect(view).to_have_attribute("data-state", "open")
    keys_ready(page)
    page.keyboard.press("Enter")
    expect(view).not_to_have_attribute("data-item-id", str(first.pk))
    saved = Audit.objects.get(item=first, auditor=scene.auditor)
    assert (saved.score, saved.blind, saved.blind_score) == (2, True, 2)
    page.goto("about:blank")  # the tab that saved it is gone

    fresh = new_page()  # another browser: no tab of its own saved anything
    log_in(fresh, scene.auditor)
    open_audit(fresh, live_server, project)
    keys_ready(fresh)
    fresh.keyboard.press("u")
    expect(fresh.locator('[data-role="hint"]')).to_contain_text("no verdict was saved in this tab. My audits")

    fresh.locator('[data-role="my-audits-link"]').click()
    expect(fresh.locator("h1")).to_have_text("My audits")
    row = fresh.locator(f'tr[data-audit="{saved.pk}"]')
    expect(row.locator('[data-role="score"]')).to_contain_text("2 · very unfaithful given blind")
    row.locator('[data-role="change"]').click()

    view = fresh.locator(VIEW)
    expect(view).to_have_attribute("data-state", "change")
    expect(view).to_have_attribute("data-audit-id", str(saved.pk))
    expect(fresh.locator("#auditor.ready")).to_be_attached()
    keys_ready(fresh)
    expect(fresh.locator('[data-role="audit-form"] [data-score="2"]')).to_have_attribute("aria-pressed", "true")
    fresh.keyboard.press("4")
    fresh.keyboard.press("Enter")
    expect(view).not_to_have_attribute("data-state", "change")
    saved.refresh_from_db()
    assert (saved.score, saved.blind, saved.blind_score) == (4, False, 2)  # the blind score stays the first

    fresh.goto(live_server.url + reverse("judging-my-audits", args=[project.slug]))
    row = fresh.locator(f'tr[data-audit="{saved.pk}"]')
    expect(row.locator('[data-role="score"]')).to_contain_text("4 · very faithful 2 given blind")
    expect(row.locator('[data-role="changed"]')).to_contain_text("changed")


def test_the_queue_order_links_switch_between_worst_first_and_shuffled(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    log_in(page, scene.auditor)
    open_audit(page, live_server, project)
    order = page.locator('[data-role="queue-order"]')
    expect(order.locator("strong")).to_have_text("worst first")
    order.locator('a[data-order="shuffled"]').click()
    expect(page.locator("#auditor.ready")).to_be_attached()
    expect(page.locator('[data-role="queue-order"] strong')).to_have_text("shuffled")
    expect(page.locator('[data-role="notice"]')).to_contain_text("Queue order: shuffled")
    page.goto(live_server.url + reverse("judging-audit", args=[project.slug]))
    expect(page.locator('[data-role="queue-order"] strong')).to_have_text(re.compile("^shuffled$"))
    page.locator('[data-role="queue-order"] a[data-order="worst"]').click()
    expect(page.locator('[data-role="queue-order"] strong')).to_have_text("worst first")
