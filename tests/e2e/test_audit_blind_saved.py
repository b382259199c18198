"""The audit page's "Saved" line says when the score was given blind, as the stored verdict (Audit.blind) says:
a blind score kept is "given blind", a blind score changed after the judges were shown is not (the line names the
score given blind instead, kept as blind_score), nor is a score given with blind mode off."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Locator, Page, expect

from annotate.models import Batch, Project
from judging.models import Audit
from tests.e2e.audit_page_helpers import keys_ready
from tests.judging.audit_helpers import build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LAST_SAVED = '[data-role="last-saved"]'


def revealed(view: Locator) -> None:
    """Wait for the judges to be shown and htmx to have settled the new view, whose forms it then posts (Enter
    before that would post the form without htmx: the full page comes back, with its Saved text elsewhere)."""
    expect(view).to_have_attribute("data-state", "open")
    expect(view).not_to_have_class(re.compile(r"htmx-settling"))
    keys_ready(view.page)


def test_the_saved_line_says_given_blind_only_for_a_score_stored_as_blind(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch, blind=True)
    first, second, third = scene.queue_order
    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[project.slug]))
    expect(page.locator("#auditor.ready")).to_be_attached()
    view = page.locator("#audit-view")
    expect(view).to_have_attribute("data-item-id", str(first.pk))

    # Blind score 4, kept after the judges appear: given blind.
    page.keyboard.press("4")
    revealed(view)
    page.keyboard.press("Enter")
    expect(view).to_have_attribute("data-item-id", str(second.pk))
    expect(page.locator(LAST_SAVED)).to_contain_text("Saved: score 4, given blind")
    assert Audit.objects.get(item=first, auditor=scene.auditor).blind is True
    keys_ready(page)

    # Blind score 2, changed to 3 once the judges are shown: the verdict is not the blind one.
    page.keyboard.press("2")
    revealed(view)
    page.keyboard.press("3")
    page.keyboard.press("Enter")
    expect(view).to_have_attribute("data-item-id", str(third.pk))
    expect(page.locator(LAST_SAVED)).to_contain_text("Saved: score 3, 2 given blind")  # the blind score, kept
    expect(page.locator(LAST_SAVED)).not_to_contain_text(", given blind")
    changed_mind = Audit.objects.get(item=second, auditor=scene.auditor)
    assert (changed_mind.blind, changed_mind.blind_score) == (False, 2)

    # Blind mode off: a score given with the judges in view is not blind either.
    page.keyboard.press("b")
    expect(view).to_have_attribute("data-blind", "off")
    revealed(view)
    page.keyboard.press("5")
    page.keyboard.press("Enter")
    expect(page.locator('[data-role="audit-empty"]')).to_be_visible()
    expect(page.locator(LAST_SAVED)).to_contain_text("Saved: score 5")
    expect(page.locator(LAST_SAVED)).not_to_contain_text("blind")
    assert Audit.objects.get(item=third, auditor=scene.auditor).blind is False
