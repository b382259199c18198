"""Typing ahead on the audit page: for a moment after another output appears (audit/settle.js's SETTLE_MS), the
presses that choose or save a verdict do nothing and say so, so "4 Enter 4 Enter 4 Enter" 120 ms apart saves one
verdict, not three (two of them on outputs shown a quarter of a second before). Once the output has been on screen
that moment, the keys work as ever; a verdict refused and shown again on the same output is not held."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from judging.models import Audit
from tests.e2e.audit_page_helpers import shown
from tests.judging.audit_helpers import AuditScene, build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

ROOT = "#auditor"
HINT = '[data-role="hint"]'


@pytest.fixture
def scene(project: Project, batch: Batch) -> AuditScene:
    return build_scene(project, batch)


def answered(scene: AuditScene) -> list[Audit]:
    return list(Audit.objects.filter(auditor=scene.auditor, answered_at__isnull=False))


def test_keys_typed_ahead_save_one_verdict_not_one_per_output(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    first, second, _ = scene.queue_order
    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[scene.project.slug]))
    expect(page.locator(f"{ROOT}.ready")).to_be_attached()
    shown(page, first)

    for key in ("4", "Enter", "4", "Enter", "4", "Enter"):
        page.keyboard.press(key)
        page.wait_for_timeout(120)

    expect(page.locator("#audit-view")).to_have_attribute("data-item-id", str(second.pk))
    # The presses after the first Enter were dropped, and said so: while the save was on its way, or (on a quick
    # server, the review's 0.24 s) because the next output had just appeared.
    expect(page.locator(HINT)).to_contain_text(re.compile("this output has just appeared|Saving"))
    page.wait_for_timeout(800)  # a save the keys wrongly started would be back by now
    assert [(audit.item_id, audit.score) for audit in answered(scene)] == [(first.pk, 4)]
    expect(page.locator("#audit-view")).to_have_attribute("data-item-id", str(second.pk))
    expect(page.locator('[data-role="audit-form"] [aria-pressed="true"]')).to_have_count(0)  # no score taken

    # Read a moment: the keys work again, on this output.
    expect(page.locator(ROOT)).not_to_have_attribute("data-settling", "true")
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    shown(page, scene.queue_order[2])
    assert sorted((audit.item_id, audit.score) for audit in answered(scene)) == sorted([(first.pk, 4), (second.pk, 2)])


def test_save_clicked_twice_saves_once_and_the_same_output_shown_again_is_not_held(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    first, second, _ = scene.queue_order
    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[scene.project.slug]))
    expect(page.locator(f"{ROOT}.ready")).to_be_attached()
    shown(page, first)

    # A refused verdict (no score) comes back on the same output: the keys are not held.
    page.click('[data-role="submit"]')
    expect(page.locator('[data-role="error"]')).to_be_visible()
    expect(page.locator(ROOT)).not_to_have_attribute("data-settling", "true")
    page.keyboard.press("3")
    expect(page.locator('[data-score="3"]')).to_have_attribute("aria-pressed", "true")

    page.click('[data-role="submit"]')
    expect(page.locator("#audit-view")).to_have_attribute("data-item-id", str(second.pk))
    page.click('[data-role="submit"]')  # the second click of a double click lands on the next output
    expect(page.locator(HINT)).to_contain_text("this output has just appeared")
    page.wait_for_timeout(300)
    expect(page.locator('[data-role="error"]')).to_have_count(0)  # nothing sent: no "give a score" refusal
    assert [(audit.item_id, audit.score) for audit in answered(scene)] == [(first.pk, 3)]
