"""Helpers shared by the audit page's browser tests: an output of one's own served first on top of the audit
scene (tests/judging/audit_helpers.py), opening the page, waiting for an item, and reading where a quote mark
falls in the rendered text."""

from __future__ import annotations

import re
from typing import Any

from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, Passage, Project, Sample
from judging.models import AuditItem, Judgement
from tests.judging.audit_helpers import judge_sample, make_judge, make_run

# The text rendered before the index-th quote mark of a text: equal to the text sliced at the mark's code points
# when the page counts right, a few characters off when it mixes code points with UTF-16 units.
TEXT_BEFORE_QUOTE = """([role, index]) => {
  const el = document.querySelector(`[data-role="${role}"]`);
  const mark = el.querySelectorAll('[data-role="quote"]')[index];
  const range = document.createRange();
  range.setStart(el, 0);
  range.setEndBefore(mark);
  return range.toString();
}"""


def add_output_served_first(
    project: Project, batch: Batch, external_id: str, source: str, output: str
) -> tuple[Sample, Judgement]:
    """A new source and output, scored 1 by a judge "cheap-first" of its own. Flagged on that judgement it sits
    below every flag of the scene, so the queue serves it first; the test adds other judges' cards, then flags."""
    passage = Passage.objects.create(project=project, external_id=external_id, text=source)
    sample = Sample.objects.create(
        project=project, passage=passage, batch=batch, position=9, external_id=external_id, summary=output
    )
    return sample, judge_sample(make_run(make_judge(project, "cheap-first")), sample, score=1)


def open_audit(page: Page, live_server: Any, project: Project) -> None:
    """Open the project's audit page and wait until its script has started."""
    page.goto(live_server.url + reverse("judging-audit", args=[project.slug]))
    expect(page.locator("#auditor.ready")).to_be_attached()


def shown(page: Page, item: AuditItem) -> None:
    """Wait until the page shows ``item`` and takes its verdict keys."""
    expect(page.locator("#audit-view")).to_have_attribute("data-item-id", str(item.pk))
    keys_ready(page)


def keys_ready(page: Page) -> None:
    """Wait until the output on screen takes the verdict keys: a moment after another one appeared, they wait
    (static/judging/audit/settle.js), so that keys typed ahead never judge an output unread."""
    # htmx first: while it settles a swap it copies class attributes from the new content, which would undo a
    # message shown meanwhile.
    expect(page.locator("#audit-view")).not_to_have_class(re.compile(r"htmx-(settling|swapping|request)"))
    expect(page.locator("#auditor")).not_to_have_attribute("data-settling", "true")


def text_before(page: Page, role: str, index: int) -> str:
    """The text rendered before the index-th quote mark of the text ``role`` (source or summary)."""
    return page.evaluate(TEXT_BEFORE_QUOTE, [role, index])
