"""The audit page in a real browser: keys 1-5 and Enter save and bring the next output, a agrees, w marks the
reasoning wrong, typing in the note triggers no key, quoted passages are highlighted at their code points
(emoji before them), blind mode hides the judge's score until a score key is pressed, and the empty queue."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from judging.models import Audit, AuditItem
from tests.e2e.audit_page_helpers import add_output_served_first, open_audit, shown, text_before
from tests.judging.audit_helpers import AuditScene, build_scene, flag, judge_sample, make_run

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# The emoji are one code point each but two UTF-16 units: a page that mixed the two would mark every
# quoted passage after them a few characters off.
EMOJI_SOURCE = "Opening day 🌉🎉 drew crowds. The bridge opened in 1911 and Mayor Ines Varga spoke."
EMOJI_OUTPUT = "On opening day 🌉 the bridge opened in 1923, said Mayor Tom Price."
EMOJI_REASONING = (
    'The output says "opened in 1923" where the source says "opened in 1911", and “Tom Price” is nowhere '
    "in the source; 'a ribbon was cut' is in neither text."
)


@pytest.fixture
def scene(project: Project, batch: Batch) -> AuditScene:
    return build_scene(project, batch)


def audit_of(item: AuditItem, user: Any) -> Audit:
    return Audit.objects.get(item=item, auditor=user)


def test_score_keys_and_enter_save_and_the_next_output_appears(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    first, second, third = scene.queue_order
    log_in(page, scene.auditor)
    open_audit(page, live_server, scene.project)
    shown(page, first)
    expect(page.locator('[data-role="judge-score"]').first).to_have_text("3 · slightly unfaithful")

    page.keyboard.press("2")
    expect(page.locator('[data-score="2"]')).to_have_attribute("aria-pressed", "true")
    page.keyboard.press("5")  # changed the mind: only the last score counts
    expect(page.locator('[data-score="2"]')).to_have_attribute("aria-pressed", "false")
    page.keyboard.press("Enter")

    shown(page, second)
    expect(page.locator('[data-role="answered"]')).to_have_text("1")
    expect(page.locator('[data-role="last-saved"]')).to_contain_text("Saved: score 5")
    expect(page.locator('[data-role="save-status"]')).to_have_text("Saved")
    saved = audit_of(first, scene.auditor)
    assert (saved.score, saved.agreed, saved.reasoning_wrong, saved.blind) == (5, False, False, False)
    assert saved.seconds is not None and saved.seconds >= 0

    page.keyboard.press("1")
    page.keyboard.press("Enter")
    shown(page, third)
    assert audit_of(second, scene.auditor).score == 1


def test_enter_without_a_score_saves_nothing_and_says_why(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    log_in(page, scene.auditor)
    open_audit(page, live_server, scene.project)
    shown(page, scene.queue_order[0])
    page.keyboard.press("Enter")
    expect(page.locator('[data-role="hint"]')).to_contain_text("Give a score (1-5) or agree with the judge (a) first")
    shown(page, scene.queue_order[0])
    assert audit_of(scene.queue_order[0], scene.auditor).answered_at is None


def test_a_agrees_with_the_shown_judge_and_w_marks_the_reasoning_wrong(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    first, second, _ = scene.queue_order
    log_in(page, scene.auditor)
    open_audit(page, live_server, scene.project)
    shown(page, first)

    page.keyboard.press("a")
    expect(page.locator('[data-role="agree"]')).to_have_attribute("aria-pressed", "true")
    page.keyboard.press("Enter")
    shown(page, second)
    agreed = audit_of(first, scene.auditor)
    assert (agreed.score, agreed.agreed) == (3, True)  # the explainer's score on output 1

    page.keyboard.press("w")
    expect(page.locator('[data-role="reasoning-wrong"]')).to_be_checked()
    page.keyboard.press("4")
    page.keyboard.press("Enter")
    shown(page, scene.queue_order[2])
    corrected = audit_of(second, scene.auditor)
    assert (corrected.score, corrected.agreed, corrected.reasoning_wrong) == (4, False, True)


def test_typing_in_the_note_triggers_no_key(page: Page, live_server: Any, log_in: Any, scene: AuditScene) -> None:
    first = scene.queue_order[0]
    log_in(page, scene.auditor)
    open_audit(page, live_server, scene.project)
    shown(page, first)

    page.keyboard.press("n")
    note = page.locator('[data-role="note"]')
    expect(note).to_be_focused()
    page.keyboard.type("a 1 w b ? 5")
    page.keyboard.press("Enter")  # a new line in the note, not a save
    page.keyboard.type("next line")
    expect(note).to_have_value("a 1 w b ? 5\nnext line")
    for score in "12345":
        expect(page.locator(f'[data-score="{score}"]')).to_have_attribute("aria-pressed", "false")
    expect(page.locator('[data-role="agree"]')).to_have_attribute("aria-pressed", "false")
    expect(page.locator('[data-role="reasoning-wrong"]')).not_to_be_checked()
    expect(page.locator("#audit-view")).to_have_attribute("data-blind", "off")
    expect(page.locator("#audit-help")).not_to_have_attribute("open", "")
    shown(page, first)

    page.keyboard.press("Escape")
    expect(note).not_to_be_focused()
    page.keyboard.press("3")
    page.keyboard.press("Enter")
    shown(page, scene.queue_order[1])
    saved = audit_of(first, scene.auditor)
    assert (saved.score, saved.note) == (3, "a 1 w b ? 5\nnext line")


def test_quoted_passages_are_highlighted_at_their_code_points_after_emoji(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    sample, flagged_by = add_output_served_first(project, batch, "emoji", EMOJI_SOURCE, EMOJI_OUTPUT)
    judge_sample(make_run(scene.explainer), sample, score=1, reasoning=EMOJI_REASONING)
    item = flag(sample, flagged_by)

    log_in(page, scene.auditor)
    open_audit(page, live_server, project)
    shown(page, item)

    source = page.locator('[data-role="source"]')
    output = page.locator('[data-role="summary"]')
    expect(source).to_have_text(EMOJI_SOURCE)  # rendered whole: nothing added or lost around the marks
    expect(output).to_have_text(EMOJI_OUTPUT)
    expect(source.locator('[data-role="quote"]')).to_have_text(["opened in 1911"])
    expect(output.locator('[data-role="quote"]')).to_have_text(["opened in 1923", "Tom Price"])
    start_1911 = EMOJI_SOURCE.index("opened in 1911")
    assert text_before(page, "source", 0) == EMOJI_SOURCE[:start_1911]
    assert text_before(page, "summary", 0) == EMOJI_OUTPUT[: EMOJI_OUTPUT.index("opened in 1923")]
    assert text_before(page, "summary", 1) == EMOJI_OUTPUT[: EMOJI_OUTPUT.index("Tom Price")]
    # The marks carry code points, which differ from the browser's UTF-16 positions after the emoji.
    mark = source.locator('[data-role="quote"]')
    expect(mark).to_have_attribute("data-start", str(start_1911))
    assert start_1911 != EMOJI_SOURCE.encode("utf-16-le").index("opened in 1911".encode("utf-16-le")) // 2

    reasoning = page.locator('[data-role="judge-reasoning"]').first
    expect(reasoning.locator('[data-role="quote-not-found"]')).to_have_count(1)
    missing = reasoning.locator('[data-role="reasoning-quote"][data-found=""]')
    expect(missing).to_have_text("a ribbon was cut")
    # Pointing at a quote in the reasoning lights its passage in the text.
    reasoning.locator('[data-role="reasoning-quote"]', has_text="Tom Price").hover()
    expect(output.locator('[data-role="quote"]', has_text="Tom Price")).to_have_class("quote active")
    expect(output.locator('[data-role="quote"]', has_text="opened in 1923")).to_have_class("quote")


def test_blind_mode_hides_the_judges_until_a_score_key_is_pressed(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch, blind=True)
    first, second, _ = scene.queue_order
    log_in(page, scene.auditor)
    open_audit(page, live_server, project)
    shown(page, first)
    expect(page.locator("#audit-view")).to_have_attribute("data-state", "blind")
    expect(page.locator('[data-role="judge-score"]')).to_have_count(0)
    expect(page.locator('[data-role="judge-reasoning"]')).to_have_count(0)
    expect(page.locator('[data-role="judges-hidden"]')).to_be_visible()
    page.keyboard.press("a")  # nothing to agree with yet
    expect(page.locator('[data-role="hint"]')).to_contain_text("Give your own score first")

    page.keyboard.press("4")

    expect(page.locator("#audit-view")).to_have_attribute("data-state", "open")
    expect(page.locator('[data-role="judge-score"]').first).to_have_text("3 · slightly unfaithful")
    expect(page.locator('[data-role="judge-reasoning"]').first).to_contain_text("12.4 million figure")
    expect(page.locator('[data-score="4"]')).to_have_attribute("aria-pressed", "true")
    assert audit_of(first, scene.auditor).answered_at is None  # revealed, not yet saved
    page.keyboard.press("w")
    page.keyboard.press("Enter")

    shown(page, second)
    expect(page.locator("#audit-view")).to_have_attribute("data-state", "blind")
    expect(page.locator('[data-role="judge-score"]')).to_have_count(0)
    saved = audit_of(first, scene.auditor)
    assert (saved.score, saved.blind, saved.reasoning_wrong) == (4, True, True)

    # b switches blind mode off: the next output shows its judges at once.
    page.keyboard.press("b")
    expect(page.locator("#audit-view")).to_have_attribute("data-blind", "off")
    expect(page.locator('[data-role="judge-score"]').first).to_be_visible()


def test_the_empty_queue_says_nothing_to_audit_and_help_lists_the_keys(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    log_in(page, scene.auditor)
    open_audit(page, live_server, scene.project)
    expect(page.locator("#audit-help")).not_to_have_attribute("open", "")
    page.keyboard.press("?")
    expect(page.locator('[data-role="shortcuts"]')).to_be_visible()
    expect(page.locator('[data-role="shortcuts"]')).to_contain_text("Agree: take the shown judge's score")
    page.keyboard.press("?")
    expect(page.locator('[data-role="shortcuts"]')).to_be_hidden()

    for item in scene.queue_order:
        shown(page, item)
        page.keyboard.press("3")
        page.keyboard.press("Enter")
    expect(page.locator('[data-role="audit-empty"]')).to_be_visible()
    expect(page.locator('[data-role="audit-empty"]')).to_contain_text("Nothing to audit")
    expect(page.locator('[data-role="left"]')).to_have_text("0")
    assert Audit.objects.filter(auditor=scene.auditor, score=3).count() == 3
    page.keyboard.press("3")  # no item: nothing happens, nothing breaks
    page.keyboard.press("Enter")
    expect(page.locator('[data-role="audit-empty"]')).to_be_visible()
