"""The settle guard the three labeling pages share (static/js/settle.js): a press that comes in the first moment new
content is on screen waits, and the page always says why in its own words; once the moment is over the same press
counts. The guard itself runs on Playwright's fake clock, so its window is checked to the millisecond with no sleep;
each page is checked with a press dispatched from the page the moment its content appears (sure to fall inside the
window however slow the machine), then a press once the page says it has settled."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, PairItem, PairJudgement, Project, SampleReview
from judging.models import Audit
from tests.e2e.annotation_helpers import wait_until_settled
from tests.e2e.audit_page_helpers import keys_ready, open_audit, shown
from tests.e2e.test_pairs_labeling import judgement, open_labeling, pairs_project, shown_item, text_items
from tests.judging.audit_helpers import AuditScene, build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

__all__ = ["pairs_project", "text_items"]  # fixtures, imported for this module's tests

# A guard of 300 ms whose refusals and changes are counted on window.__guard, built on the page's fake clock.
MAKE_GUARD = """async () => {
  const { settleGuard } = await import('/static/js/settle.js');
  const log = { refused: 0, changes: [] };
  const guard = settleGuard({ ms: 300, refused: () => log.refused++, changed: (settled) => log.changes.push(settled) });
  window.__guard = { guard, log };
}"""
CHECK = """() => {
  const { guard, log } = window.__guard;
  return { refuses: guard.refuses(), settled: guard.settled, refused: log.refused, changes: [...log.changes] };
}"""


def test_the_shared_guard_refuses_aloud_until_its_window_is_over(page: Page, live_server: Any) -> None:
    page.clock.install()
    page.goto(live_server.url + "/accounts/login/")
    page.clock.pause_at(page.evaluate("Date.now()") + 1000)  # time moves only when the test moves it
    page.evaluate(MAKE_GUARD)

    # Nothing has appeared yet: nothing to wait for.
    assert page.evaluate(CHECK) == {"refuses": False, "settled": True, "refused": 0, "changes": []}

    page.evaluate("() => window.__guard.guard.restart()")
    assert page.evaluate(CHECK) == {"refuses": True, "settled": False, "refused": 1, "changes": [False]}
    page.clock.run_for(299)
    assert page.evaluate(CHECK) == {"refuses": True, "settled": False, "refused": 2, "changes": [False]}
    page.clock.run_for(1)
    assert page.evaluate(CHECK) == {"refuses": False, "settled": True, "refused": 2, "changes": [False, True]}

    # New content inside the window starts it again, from then.
    page.evaluate("() => window.__guard.guard.restart()")
    page.clock.run_for(200)
    page.evaluate("() => window.__guard.guard.restart()")
    page.clock.run_for(200)
    assert page.evaluate(CHECK)["refuses"] is True
    page.clock.run_for(100)
    assert page.evaluate(CHECK) == {
        "refuses": False, "settled": True, "refused": 3, "changes": [False, True, False, False, True],
    }


def test_a_guard_cannot_be_made_to_drop_a_press_silently(page: Page, live_server: Any) -> None:
    page.goto(live_server.url + "/accounts/login/")
    error = page.evaluate("""async () => {
      const { settleGuard } = await import('/static/js/settle.js');
      try { settleGuard({ ms: 300 }); return null; } catch (error) { return error.message; }
    }""")
    assert error and "never dropped silently" in error


# The span page: D dispatched as soon as the page's script marks it ready (the sample has just appeared).
PRESS_D_WHEN_READY = """() => {
  const observer = new MutationObserver(() => {
    const root = document.getElementById('annotator');
    if (!root || !root.classList.contains('ready')) return;
    observer.disconnect();
    window.__pressedAt = root.dataset.settled;
    document.body.dispatchEvent(new KeyboardEvent('keydown', {key: 'd', bubbles: true, cancelable: true}));
  });
  observer.observe(document, {attributes: true, subtree: true, attributeFilter: ['class']});
}"""


def test_span_page_d_as_the_sample_appears_says_so_and_d_once_settled_marks_it_done(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Batch
) -> None:
    first, second, _ = batch.samples.order_by("position")
    log_in(page, alice)
    page.add_init_script(f"({PRESS_D_WHEN_READY})()")
    page.goto(live_server.url + reverse("sample", args=[batch.project.slug, first.pk]) + "?round=1")
    expect(page.locator("#annotator.ready")).to_be_visible()

    assert page.evaluate("() => window.__pressedAt") == "false"  # the press came inside the window
    expect(page.locator('[data-role="notice"]')).to_contain_text(
        "Not marked done: this sample has only just appeared. Read it, then press D again."
    )
    assert not SampleReview.objects.filter(sample=first, annotator=alice, done=True).exists()

    wait_until_settled(page)
    page.keyboard.press("d")
    page.wait_for_url(f"**{reverse('sample', args=[batch.project.slug, second.pk])}*")
    assert SampleReview.objects.filter(sample=first, annotator=alice, round=1, done=True).exists()


# The pair labeling page: a click on an answer the moment the first item is put on the page.
CLICK_WHEN_THE_FIRST_ITEM_SHOWS = """() => {
  const observer = new MutationObserver(() => {
    const root = document.getElementById('pair-labeler');
    if (!root || !root.dataset.itemId) return;
    observer.disconnect();
    window.__clicked = {item: root.dataset.itemId, answerable: root.dataset.answerable};
    root.querySelector('[data-label="H"]').click();
  });
  observer.observe(document, {attributes: true, subtree: true, attributeFilter: ['data-item-id']});
}"""


def test_pairs_page_a_click_as_the_first_item_appears_says_too_fast_and_a_click_once_settled_counts(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, _ = text_items
    log_in(page, alice)
    page.add_init_script(f"({CLICK_WHEN_THE_FIRST_ITEM_SHOWS})()")
    open_labeling(page, live_server, date.project)
    shown_item(page, date, answerable=False)

    assert page.evaluate("() => window.__clicked") == {"item": str(date.pk), "answerable": "false"}
    expect(page.locator('[data-role="too-fast"]')).to_have_text(
        "Too fast — that press was ignored. Read the item, then answer."
    )
    shown_item(page, date)  # settled, still the same item: the click answered nothing
    assert not PairJudgement.objects.filter(item=date, judge=alice).exclude(label="").exists()

    page.click('[data-label="N"]')
    shown_item(page, name, answerable=False)
    assert judgement(date, alice).label == "N"


@pytest.fixture
def scene(project: Project, batch: Batch) -> AuditScene:
    return build_scene(project, batch)


# The audit page: a score key the moment another output has been swapped in and settled by htmx (the save's request
# over, so the busy guard is out of the way: only the settle window holds the key).
PRESS_3_WHEN_ANOTHER_OUTPUT_SETTLES = """(first) => {
  document.addEventListener('htmx:afterSettle', function press() {
    const view = document.getElementById('audit-view');
    if (!view || view.dataset.itemId === first) return;
    document.removeEventListener('htmx:afterSettle', press);
    window.__pressed = {item: view.dataset.itemId,
                        settling: document.getElementById('auditor').dataset.settling || null};
    document.body.dispatchEvent(new KeyboardEvent('keydown', {key: '3', bubbles: true, cancelable: true}));
  });
}"""


def test_audit_page_a_score_key_as_the_next_output_appears_says_so_and_once_settled_it_counts(
    page: Page, live_server: Any, log_in: Any, scene: AuditScene
) -> None:
    first, second, third = scene.queue_order
    log_in(page, scene.auditor)
    open_audit(page, live_server, scene.project)
    shown(page, first)
    page.evaluate(PRESS_3_WHEN_ANOTHER_OUTPUT_SETTLES, str(first.pk))

    page.keyboard.press("4")
    page.keyboard.press("Enter")
    expect(page.locator("#audit-view")).to_have_attribute("data-item-id", str(second.pk))

    expect(page.locator('[data-role="hint"]')).to_have_text(
        "Not taken: this output has just appeared. Read it, then press again."
    )
    assert page.evaluate("() => window.__pressed") == {"item": str(second.pk), "settling": "true"}
    expect(page.locator('[data-role="audit-form"] [aria-pressed="true"]')).to_have_count(0)  # no score taken

    keys_ready(page)
    page.keyboard.press("3")
    expect(page.locator('[data-score="3"]')).to_have_attribute("aria-pressed", "true")
    page.keyboard.press("Enter")
    shown(page, third)
    answered = Audit.objects.filter(auditor=scene.auditor, answered_at__isnull=False)
    assert sorted((audit.item_id, audit.score) for audit in answered) == sorted([(first.pk, 4), (second.pk, 3)])
