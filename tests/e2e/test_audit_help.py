"""The audit page's ? on a laptop-sized window: the keyboard shortcuts it opens sit under the verdict form, so the
page brings them into view; otherwise the key seems to do nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from tests.judging.audit_helpers import AuditScene, build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

IN_VIEW = """(selector) => {
  const box = document.querySelector(selector).getBoundingClientRect();
  return box.top >= 0 && box.bottom <= window.innerHeight;
}"""


def test_question_mark_shows_the_shortcut_list_in_view(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene: AuditScene = build_scene(project, batch)
    page.set_viewport_size({"width": 1366, "height": 680})  # a 768-pixel laptop screen less the browser's bars
    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[project.slug]))
    expect(page.locator("#auditor.ready")).to_be_attached()
    shortcuts = page.locator('#audit-help [data-role="shortcuts"]')
    assert not page.evaluate(IN_VIEW, "#audit-help summary")  # under the fold, as on a laptop

    page.keyboard.press("?")

    expect(shortcuts).to_be_visible()
    assert page.evaluate(IN_VIEW, '#audit-help [data-role="shortcuts"]')
    # The keys work as before with the list open: a score key presses its button.
    page.keyboard.press("4")
    expect(page.locator('[data-score="4"]')).to_have_attribute("aria-pressed", "true")
    page.keyboard.press("Escape")
    expect(shortcuts).to_be_hidden()
