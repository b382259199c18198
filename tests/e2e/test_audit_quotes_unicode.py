"""Quoted passages in non-Latin and unnormalised text, in a real browser: a Han quote inside a run of Han, a name
quoted with a precomposed accent where the text has a combining one, a word broken by a zero-width space, all
after emoji (a ZWJ sequence among them). Each mark covers exactly the original characters at their code points,
and the text is rendered whole around the marks."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, Passage, Project, Sample
from judging.models import AuditItem
from tests.judging.audit_helpers import build_scene, flag, judge_sample, make_judge, make_run

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SOURCE = "👩\u200d💻🌉 北京大学的研究人员发现 the bridge opened in 1911; Mayor Ine\u0301s Varga spoke."
OUTPUT = "🌉 The Ac\u200bme Corp bridge opened in 1923."
REASONING = 'The source says "北京大学" and "Ines Varga" (no: "In\u00e9s Varga"); the output names "Acme Corp".'


def text_before(page: Page, role: str, index: int) -> str:
    """The text rendered before the index-th quote mark of a text: equal to the text sliced at its code points."""
    return page.evaluate(
        """([role, index]) => {
          const el = document.querySelector(`[data-role="${role}"]`);
          const mark = el.querySelectorAll('[data-role="quote"]')[index];
          const range = document.createRange();
          range.setStart(el, 0);
          range.setEndBefore(mark);
          return range.toString();
        }""",
        [role, index],
    )


def test_cjk_accented_and_zero_width_quotes_are_highlighted_on_the_original_characters(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    passage = Passage.objects.create(project=project, external_id="unicode", text=SOURCE)
    sample = Sample.objects.create(
        project=project, passage=passage, batch=batch, position=9, external_id="unicode", summary=OUTPUT
    )
    flagged_by = judge_sample(make_run(make_judge(project, "cheap-first")), sample, score=1)  # served first
    judge_sample(make_run(scene.explainer), sample, score=1, reasoning=REASONING)
    item: AuditItem = flag(sample, flagged_by)

    log_in(page, scene.auditor)
    page.goto(live_server.url + reverse("judging-audit", args=[project.slug]))
    expect(page.locator("#auditor.ready")).to_be_attached()
    expect(page.locator("#audit-view")).to_have_attribute("data-item-id", str(item.pk))

    source = page.locator('[data-role="source"]')
    output = page.locator('[data-role="summary"]')
    expect(source).to_have_text(SOURCE)
    expect(output).to_have_text(OUTPUT)
    name = SOURCE[SOURCE.index("Ine") : SOURCE.index(" spoke")]
    assert name == "Ine\u0301s Varga"
    expect(source.locator('[data-role="quote"]')).to_have_text(["北京大学", name])
    expect(output.locator('[data-role="quote"]')).to_have_text(["Ac\u200bme Corp"])
    assert text_before(page, "source", 0) == SOURCE[: SOURCE.index("北京")]
    assert text_before(page, "source", 1) == SOURCE[: SOURCE.index("Ine")]
    assert text_before(page, "summary", 0) == OUTPUT[: OUTPUT.index("Ac")]
    marks = source.locator('[data-role="quote"]')
    expect(marks.nth(1)).to_have_attribute("data-start", str(SOURCE.index("Ine")))
    expect(marks.nth(1)).to_have_attribute("data-end", str(SOURCE.index(" spoke")))

    reasoning = page.locator('[data-role="judge-reasoning"]').first
    # "Ines Varga" without its accent is another name: not found, and said so.
    expect(reasoning.locator('[data-role="reasoning-quote"][data-found=""]')).to_have_text(["Ines Varga"])
