"""A saved verdict open for a change in two tabs: tab A saves its change, then tab B, drawn before, saves its own.
Tab B's change used to replace tab A's without a word (the form sends the whole verdict: tab A's score went too).
Now tab B is refused: the page says so, shows the verdict tab A saved, and keeps tab B's change in the form, where
Enter applies it over tab A's, knowingly; the link beside it starts again from the saved verdict."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from judging.models import Audit
from judging.services import audits
from tests.e2e.audit_page_helpers import keys_ready
from tests.judging.audit_helpers import build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

VIEW = "#audit-view"
FORM = '[data-role="audit-form"]'


def open_change(tab: Page, url: str) -> None:
    tab.goto(url)
    expect(tab.locator(VIEW)).to_have_attribute("data-state", "change")
    expect(tab.locator("#auditor.ready")).to_be_attached()
    keys_ready(tab)


def write_note(tab: Page, text: str) -> None:
    tab.keyboard.press("n")
    note = tab.locator(f'{FORM} [data-role="note"]')
    expect(note).to_be_focused()
    note.fill(text)


def test_a_stale_tabs_change_is_refused_showing_the_saved_verdict_and_applied_on_request(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    served = audits.serve_next_audit(project, scene.auditor)
    assert served is not None
    audit, _ = audits.submit_audit(project, scene.auditor, served.item_id, score=2, agreed=False,
                                   reasoning_wrong=False, note="first look")
    url = live_server.url + reverse("judging-audit-answered", args=[project.slug, audit.pk])

    log_in(page, scene.auditor)
    tab_a = page
    tab_b = page.context.new_page()  # the same browser, so the same login
    open_change(tab_a, url)
    open_change(tab_b, url)

    tab_a.keyboard.press("1")
    write_note(tab_a, "tab A: the date is wrong")
    tab_a.keyboard.press("Control+Enter")
    expect(tab_a.locator(VIEW)).not_to_have_attribute("data-state", "change")
    audit.refresh_from_db()
    assert (audit.score, audit.note) == (1, "tab A: the date is wrong")
    changed_at = audit.changed_at

    # Tab B still shows score 2 and the first note; it fixes a typo in the note and saves.
    write_note(tab_b, "tab B: typo fixed")
    tab_b.keyboard.press("Control+Enter")
    conflict = tab_b.locator('[data-role="verdict-conflict"]')
    expect(conflict).to_be_visible()
    expect(tab_b.locator('[data-role="error"]')).to_contain_text("Not saved: this verdict was changed at")
    expect(conflict.locator('[data-role="current-score"]')).to_have_text("1")
    expect(conflict.locator('[data-role="current-note"]')).to_have_text("tab A: the date is wrong")
    expect(tab_b.locator(VIEW)).to_have_attribute("data-state", "change")
    # Its change is kept in the form, not saved: tab A's verdict stands.
    expect(tab_b.locator(f'{FORM} [data-role="note"]')).to_have_value("tab B: typo fixed")
    expect(tab_b.locator(f'{FORM} [data-score="2"]')).to_have_attribute("aria-pressed", "true")
    audit.refresh_from_db()
    assert (audit.score, audit.note, audit.changed_at) == (1, "tab A: the date is wrong", changed_at)

    # Tab B takes tab A's score and keeps its own note: saved over the verdict it was shown.
    keys_ready(tab_b)
    tab_b.locator(f"{FORM} [data-score='1']").click()
    tab_b.locator(f'{FORM} [data-role="submit"]').click()
    expect(tab_b.locator(VIEW)).not_to_have_attribute("data-state", "change")
    expect(tab_b.locator('[data-role="verdict-conflict"]')).to_have_count(0)
    audit.refresh_from_db()
    assert (audit.score, audit.note) == (1, "tab B: typo fixed")
    assert Audit.objects.filter(item=audit.item, auditor=scene.auditor).count() == 1


def test_the_link_beside_the_conflict_starts_again_from_the_saved_verdict(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    served = audits.serve_next_audit(project, scene.auditor)
    assert served is not None
    audit, _ = audits.submit_audit(project, scene.auditor, served.item_id, score=2, agreed=False,
                                   reasoning_wrong=False, note="first look")
    url = live_server.url + reverse("judging-audit-answered", args=[project.slug, audit.pk])
    log_in(page, scene.auditor)
    open_change(page, url)
    # Changed meanwhile elsewhere (another browser, or the API).
    audits.change_audit(project, scene.auditor, audit.pk, score=5, agreed=False, reasoning_wrong=False,
                        note="changed elsewhere")

    page.keyboard.press("3")
    page.keyboard.press("Enter")
    expect(page.locator('[data-role="verdict-conflict"]')).to_be_visible()
    page.locator('[data-role="take-current"]').click()
    expect(page.locator('[data-role="verdict-conflict"]')).to_have_count(0)
    expect(page.locator(VIEW)).to_have_attribute("data-state", "change")
    expect(page.locator(f'{FORM} [data-score="5"]')).to_have_attribute("aria-pressed", "true")
    expect(page.locator(f'{FORM} [data-role="note"]')).to_have_value("changed elsewhere")
    audit.refresh_from_db()
    assert (audit.score, audit.note) == (5, "changed elsewhere")
