"""Quoted passages in non-Latin and unnormalised text, in a real browser: a Han quote inside a run of Han, a name
quoted with a precomposed accent where the text has a combining one, a word broken by a zero-width space, all
after emoji (a ZWJ sequence among them). Each mark covers exactly the original characters at their code points,
and the text is rendered whole around the marks."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from judging.models import AuditItem
from tests.e2e.audit_page_helpers import add_output_served_first, open_audit, shown, text_before
from tests.judging.audit_helpers import build_scene, flag, judge_sample, make_run

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SOURCE = "👩\u200d💻🌉 北京大学的研究人员发现 the bridge opened in 1911; Mayor Ine\u0301s Varga spoke."
OUTPUT = "🌉 The Ac\u200bme Corp bridge opened in 1923."
REASONING = 'The source says "北京大学" and "Ines Varga" (no: "In\u00e9s Varga"); the output names "Acme Corp".'


def test_cjk_accented_and_zero_width_quotes_are_highlighted_on_the_original_characters(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    sample, flagged_by = add_output_served_first(project, batch, "unicode", SOURCE, OUTPUT)
    judge_sample(make_run(scene.explainer), sample, score=1, reasoning=REASONING)
    item: AuditItem = flag(sample, flagged_by)

    log_in(page, scene.auditor)
    open_audit(page, live_server, project)
    shown(page, item)

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
