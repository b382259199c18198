"""The synthetic set's page follows its own progress in a real browser: the "What the set holds" card moves with the
polled line while the set is written, and once the set is done a link brings the items and tables (the live region is not reloaded under a reader)."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Project
from judging.models import Judge, SyntheticSet

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_set_page_updates_its_summary_and_offers_the_items_when_done(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project
) -> None:
    writer = Judge.objects.create(project=project, name="writer", kind=Judge.Kind.RUBRIC,
                                  base_url="http://127.0.0.1:9/v1", model="test-model")
    synthetic = SyntheticSet.objects.create(project=project, name="rewrites", writer=writer, total=10,
                                            status="running", done=3)
    log_in(page, admin_user)
    url = live_server.url + reverse("judging-synthetic-set", args=[project.slug, synthetic.pk])
    page.goto(url)
    line = page.locator(f"#synthetic-{synthetic.pk}")
    expect(line.locator("[data-role='set-status']")).to_contain_text("3 / 10 · Running")
    summary = page.locator(f"#set-{synthetic.pk}-summary")
    expect(summary).to_be_visible()
    page.evaluate("document.querySelector('[data-role=\"set-summary\"]').dataset.before = 'yes'")
    with page.expect_response(lambda response: response.url == url + "?on=page"):
        pass
    page.wait_for_timeout(300)
    # Swapped out of band by the poll: a new element, without the mark set on the old one.
    expect(summary).not_to_have_attribute("data-before", "yes")
    SyntheticSet.objects.filter(pk=synthetic.pk).update(status="done", done=10)
    expect(line.locator("[data-role='set-status']")).to_contain_text("10 / 10 · Done")
    expect(summary).not_to_have_attribute("data-before", "yes")
    with page.expect_navigation(timeout=10_000):  # the items and tables: one click, no reload by itself
        line.locator("[data-role='show-items']").click()
    expect(line.locator("[data-role='set-status']")).to_contain_text("10 / 10 · Done")
    expect(line).not_to_have_attribute("hx-get", url.removeprefix(live_server.url) + "?on=page")
