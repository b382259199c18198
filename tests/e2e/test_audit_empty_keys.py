"""The audit page's "Nothing to audit" view: the verdict keys (1-5, a, w, n, Enter, Ctrl+Enter) have no output to act
on. They used to do nothing and say nothing; each press now says why in the hint area, with what to do, once, and
nothing breaks. Enter on the view's Check again button still does that button's own action."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from judging.models import AuditItem
from tests.e2e.audit_page_helpers import open_audit
from tests.judging.audit_helpers import AuditScene, build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# Every time the hint's words are written (hint() sets them once per message), counted.
COUNT_HINTS = """() => {
  window.hintsSaid = 0;
  const el = document.querySelector('[data-role="hint"]');
  new MutationObserver((records) => { window.hintsSaid += records.length; }).observe(el, { childList: true });
}"""


@pytest.fixture
def empty_scene(project: Project, batch: Batch) -> AuditScene:
    scene = build_scene(project, batch)
    AuditItem.objects.filter(project=project).delete()
    return scene


def test_verdict_keys_on_the_empty_view_say_why_once_per_press(
    page: Page, live_server: Any, log_in: Any, empty_scene: AuditScene
) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    log_in(page, empty_scene.auditor)
    open_audit(page, live_server, empty_scene.project)
    expect(page.locator('[data-role="audit-empty"]')).to_be_visible()
    hint = page.locator('[data-role="hint"]')
    expect(hint).to_be_hidden()
    page.evaluate(COUNT_HINTS)

    keys = ["1", "2", "3", "4", "5", "Enter", "a", "w", "n", "Control+Enter"]
    for count, key in enumerate(keys, start=1):
        page.keyboard.press(key)
        expect(hint).to_be_visible()
        expect(hint).to_contain_text("Nothing to audit here")
        expect(hint).to_contain_text("Check again")
        assert page.evaluate("window.hintsSaid") == count, key
    expect(page.locator('[data-role="audit-empty"]')).to_be_visible()
    assert errors == []

    # Enter on the Check again button is that button's: the view is asked again, no hint said.
    page.focus('[data-role="check-again"]')
    with page.expect_response(lambda response: "audit" in response.url and response.request.method == "GET"):
        page.keyboard.press("Enter")
    expect(hint).to_be_hidden()  # the swapped view's own hint, not shown
    expect(page.locator('[data-role="audit-empty"]')).to_be_visible()
    page.keyboard.press("4")  # and the keys say it again on the swapped view
    expect(hint).to_contain_text("Nothing to audit here")
    assert errors == []
