"""The audit page's flag line at 1280 px: one line (the texts and the form keep their place from item to item), and
what it cuts short is the flag reason (whole in the line's title), never who wrote the output or the sample's
number: "· sample N" used to be cut off by the ellipsis."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page

from annotate.models import Batch, Project
from tests.e2e.audit_page_helpers import shown
from tests.judging.audit_helpers import build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LONG_REASON = "p 0.030 < 0.5 from judge demo-nli-firstpass (run 1), and a keyword screen: timber, stone, harbour board"
# The line's box and its parts', in window pixels.
PARTS = """() => {
  const why = document.querySelector('#audit-view .audit-why');
  const box = (el) => { if (!el) return null; const r = el.getBoundingClientRect(); return [r.left, r.right, r.top]; };
  return {why: box(why), writer: box(why.querySelector('.why-writer')), sample: box(why.querySelector('.sample-id')),
          height: why.getBoundingClientRect().height, lineHeight: parseFloat(getComputedStyle(why).lineHeight),
          text: why.textContent.replace(/\\s+/g, ' ').trim()};
}"""


def test_the_flag_line_keeps_the_writer_and_the_sample_number_whole_at_1280(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    item = scene.queue_order[0]
    item.reason = LONG_REASON
    item.save(update_fields=["reason"])
    item.sample.generator = "fabrikam/tldr-3b"
    item.sample.save(update_fields=["generator"])
    page.set_viewport_size({"width": 1280, "height": 720})
    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[project.slug]))
    shown(page, item)

    parts = page.evaluate(PARTS)
    assert f"sample {item.sample.external_id}" in parts["text"]
    left, right, _ = parts["why"]
    for name in ("sample", "writer"):
        assert parts[name] is not None, parts
        assert left - 1 <= parts[name][0] and parts[name][1] <= right + 1, (name, parts)
    assert parts["height"] < 1.5 * parts["lineHeight"], parts  # still one line
