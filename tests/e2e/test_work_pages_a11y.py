"""Accessibility of the three work pages (span annotation, pair labeling, audit), from a WCAG 2.2 AA review.

Without axe-core (the project installs no npm package) each finding is asserted directly:
- the span page has one h1 (its batch and round), in the header's trail like the other two pages' (1.3.1);
- no toolbar role without the arrow keys it promises, and no aria-label on an element whose role cannot be named:
  named groups instead (4.1.2);
- a shaded sentence's figure (similarity, the first pass's p) is said in words after it, in generated text that the
  browser's accessibility tree holds (a screen reader reads it) and that shows while the text has the keyboard's
  focus, without a text node in the texts: spans saved by keyboard and quoted passages keep their code points (1.4.1);
- the audit page's flag line and judge line wrap whole at 200% zoom and on tablets, and stay one line at 1366x768
  (1.4.10);
- at 200% zoom (640x400) the span page's toolbar scrolls away instead of covering a third of the window, and no
  control the Tab key reaches is hidden under anything (2.4.11); at 1366x768 it stays sticky.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, PairItem, Project, Sample
from judging.models import AuditItem
from tests.e2e.annotation_helpers import eventually, open_sample, saved_spans, select_words
from tests.e2e.test_pairs_labeling import open_labeling, pairs_project, text_items
from tests.judging.audit_helpers import AuditScene, build_scene, flag, judge_sample, make_judge, make_run

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

__all__ = ["pairs_project", "text_items"]  # fixtures, imported for this module's tests

LAPTOP = {"width": 1366, "height": 768}
ZOOM_200 = {"width": 640, "height": 400}  # a 1280x800 window at 200% zoom
LONG_REASON = "flagged by the first pass and by a keyword screen: " + "timber, stone, pier, harbour board; " * 4
LONG_JUDGE = "llama-3.1-70b-instruct-rubric-explainer"

# Elements named by aria-label whose role takes no name (ARIA 1.2: generic, paragraph and the like).
UNNAMEABLE = "[aria-label]:is(div, span, p, b, i, em, strong, small, code, pre, kbd):not([role])"

# What the focused element's centre shows: the element itself, or whatever covers it.
FOCUS_COVERED = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const r = el.getBoundingClientRect();
  if (!r.width || !r.height || r.bottom <= 0 || r.top >= innerHeight) return null;
  const x = Math.min(Math.max(r.left + Math.min(r.width / 2, 20), 0), innerWidth - 1);
  const y = Math.min(Math.max(r.top + Math.min(r.height / 2, 10), 0), innerHeight - 1);
  const top = document.elementFromPoint(x, y);
  if (!top || el === top || el.contains(top) || top.contains(el)) return null;
  return `${el.tagName}[${el.dataset.role || el.className}] under ${top.tagName}.${top.className}`;
}"""

# How a shaded sentence's words look: its ::after box while hidden (1 px, clipped) and while shown.
AFTER_BOXES = """(selector) => [...document.querySelectorAll(selector)].map((sentence) => {
  const after = getComputedStyle(sentence, "::after");
  return {content: after.content, position: after.position, width: after.width, clip: after.clipPath};
})"""

# Lines a text takes: a Range yields a rect per fragment of each line; one starting below the others starts a line.
LINES = """(selector) => {
  const el = document.querySelector(selector);
  const range = document.createRange();
  range.selectNodeContents(el);
  const rects = [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0).sort((a, b) => a.top - b.top);
  let lines = 0;
  let bottom = -Infinity;
  for (const rect of rects) {
    if (rect.top >= bottom - 1) { lines += 1; bottom = rect.bottom; } else bottom = Math.max(bottom, rect.bottom);
  }
  const box = el.getBoundingClientRect();
  return {lines, scrollWidth: el.scrollWidth, clientWidth: el.clientWidth, scrollHeight: el.scrollHeight,
          clientHeight: el.clientHeight, left: box.left, right: box.right, windowWidth: innerWidth,
          pageWidth: document.documentElement.scrollWidth};
}"""


def accessible_texts(page: Page, selector: str) -> tuple[dict[str, Any], list[str]]:
    """The browser's own accessibility node for ``selector`` and the texts of its subtree, in reading order.

    Read from Chromium's accessibility tree (DevTools protocol), not from the DOM: generated text is in it, and
    anything aria-hidden is left out, as a screen reader gets them."""
    cdp = page.context.new_cdp_session(page)
    try:
        root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        node_id = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
        backend = cdp.send("DOM.describeNode", {"nodeId": node_id})["node"]["backendNodeId"]
        nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
    finally:
        cdp.detach()
    by_id = {node["nodeId"]: node for node in nodes}
    start = next(node for node in nodes if node.get("backendDOMNodeId") == backend)
    texts: list[str] = []
    stack = [start]
    while stack:
        node = stack.pop()
        if node.get("role", {}).get("value") == "StaticText" and not node.get("ignored"):
            texts.append(node.get("name", {}).get("value", ""))
        stack.extend(by_id[child] for child in reversed(node.get("childIds", [])) if child in by_id)
    return start, texts


def role_and_name(node: dict[str, Any]) -> tuple[str, str]:
    return node.get("role", {}).get("value", ""), node.get("name", {}).get("value", "")


def tab_to(page: Page, selector: str, presses: int = 40) -> None:
    """Press Tab until ``selector`` has the focus: the keyboard's way there (focus-visible, as a person gets it)."""
    target = page.locator(selector)
    for _ in range(presses):
        page.keyboard.press("Tab")
        if target.evaluate("(el) => el === document.activeElement"):
            return
    raise AssertionError(f"Tab never reached {selector} in {presses} presses")


def assert_named_groups_only(page: Page, toolbar_name: str) -> None:
    expect(page.locator('[role="toolbar"]')).to_have_count(0)
    expect(page.get_by_role("group", name=toolbar_name, exact=True)).to_have_class(re.compile(r"\btoolbar\b"))
    unnameable = page.eval_on_selector_all(UNNAMEABLE, "(els) => els.map((el) => el.outerHTML.slice(0, 120))")
    assert unnameable == [], f"aria-label on elements whose role takes no name: {unnameable}"


def audit_url(project: Project) -> str:
    return reverse("judging-audit", args=[project.slug])


def open_audit(page: Page, live_server: Any, log_in: Any, scene: AuditScene, item: AuditItem) -> None:
    log_in(page, scene.auditor)
    page.goto(live_server.url + audit_url(scene.project))
    expect(page.locator("#auditor.ready")).to_be_attached()
    expect(page.locator("#audit-view")).to_have_attribute("data-item-id", str(item.pk))


@pytest.fixture
def zoomed_page(new_page: Callable[..., Page]) -> Page:
    """A 1280x800 window at 200% zoom: 640x400 CSS pixels, two device pixels each."""
    return new_page(viewport=ZOOM_200, device_scale_factor=2)


# ---------- headings and roles ----------


def test_the_span_page_has_one_h1_naming_its_batch_and_round_in_the_header_trail(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    heading = page.locator("h1")
    expect(heading).to_have_count(1)
    expect(heading).to_have_text(f"{sample.batch.name} / Round 1")
    looks = page.evaluate("""() => {
      const h1 = document.querySelector("h1");
      const trail = h1.parentElement;
      const header = document.querySelector("header.topbar").getBoundingClientRect();
      const box = h1.getBoundingClientRect();
      const style = (el) => { const s = getComputedStyle(el); return [s.fontSize, s.fontWeight, s.display]; };
      return {h1: style(h1), trail: style(trail).slice(0, 2), inHeader: header.top <= box.top && box.bottom <= header.bottom,
              inTrail: trail.matches(".crumb") && trail.closest("header.topbar") !== null};
    }""")
    assert looks["inHeader"] and looks["inTrail"], looks
    # Styled as the trail was: its size and weight, on its line.
    assert looks["h1"] == [*looks["trail"], "inline"], looks


def test_the_span_page_uses_named_groups_not_a_toolbar_role(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    assert_named_groups_only(page, "Annotation tools")
    expect(page.get_by_role("group", name="Labels", exact=True).get_by_role("button")).to_have_count(
        page.locator(".label-button").count()
    )
    for name, role in (("Summary text", "summary"), ("Source text", "source")):
        expect(page.get_by_role("group", name=name, exact=True)).to_have_attribute("data-role", role)


def test_the_pair_page_uses_named_groups_not_a_toolbar_role(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    log_in(page, alice)
    open_labeling(page, live_server, text_items[0].project)
    assert_named_groups_only(page, "Pair labeling")
    expect(page.get_by_role("group", name="Your answer", exact=True).get_by_role("button")).to_have_count(3)
    for name, role in (("Original text", "original"), ("Changed text", "perturbed")):
        expect(page.get_by_role("group", name=name, exact=True)).to_have_attribute("data-role", role)


def test_the_audit_page_uses_named_groups_not_a_toolbar_role(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    open_audit(page, live_server, log_in, scene, scene.queue_order[0])
    assert_named_groups_only(page, "Audit")
    for name, role in (("Source text", "source"), ("Output text", "summary")):
        expect(page.get_by_role("group", name=name, exact=True)).to_have_attribute("data-role", role)


# ---------- shading said in words ----------


def test_each_shaded_sentence_says_its_similarity_and_keyboard_spans_keep_their_offsets(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample, embedded: Any
) -> None:
    sample.refresh_from_db()
    log_in(page, alice)
    open_sample(page, live_server, sample)
    # The summary has the focus from the start; selecting source words with the mouse would take it away. Selected
    # here by script, so the focus leaves as the mouse would take it.
    page.evaluate("() => document.activeElement.blur()")
    # Source words selected: the summary's sentences are shaded by their similarity with them.
    with page.expect_response(lambda r: "similarity" in r.url and r.status == 200):
        select_words(page, "source", sample.passage.text, "eight weeks of repairs")
    shaded = page.locator('[data-role="summary"] [data-sentence][data-similarity]')
    expect(shaded).to_have_count(len(sample.sentences))
    scores = shaded.evaluate_all("(els) => els.map((el) => [el.dataset.similarity, el.dataset.rank || ''])")

    # A screen reader gets each score after its sentence; the text's DOM holds nothing new.
    node, texts = accessible_texts(page, '[data-role="summary"]')
    assert role_and_name(node) == ("group", "Summary text")
    said = [text for text in texts if text.startswith("(similarity")]
    assert said == [f"(similarity {score}" + (f", closest #{rank})" if rank else ")") for score, rank in scores], texts
    assert "".join(text for text in texts if not text.startswith("(similarity")) == sample.summary  # read whole
    assert page.locator('[data-role="summary"]').text_content() == sample.summary
    # The rank badge drawn before a closest sentence is silent: the words after it say the rank.
    assert not [text for text in texts if re.fullmatch(r"\d", text)], texts
    hidden = page.evaluate(AFTER_BOXES, '[data-role="summary"] [data-similarity]')
    assert all(box["position"] == "absolute" and box["width"] == "1px" for box in hidden), hidden

    # The legend is read too, in words.
    _, legend = accessible_texts(page, '[data-role="legend"]')
    assert any("the darker a sentence, the more similar" in text for text in legend), legend

    # Tab to the summary: every score shows beside its sentence for the keyboard's user.
    tab_to(page, '[data-role="summary"]')
    shown = page.evaluate(AFTER_BOXES, '[data-role="summary"] [data-similarity]')
    assert all(box["position"] == "static" and box["width"] != "1px" and box["clip"] == "none" for box in shown), shown

    # The keyboard's caret and selection, across a sentence with its words after it, still save exact code points.
    page.keyboard.press("Control+ArrowDown")  # the start of the next sentence
    for _ in range(2):
        page.keyboard.press("Control+Shift+ArrowRight")
    start = sample.summary.index("The 12.4 million")
    assert page.evaluate("() => String(window.getSelection())").startswith("The 12")
    page.keyboard.press("1")
    expect(page.locator("[data-span-id]")).to_have_count(1)
    (span,) = eventually(lambda: saved_spans(sample, alice))
    assert span.start == start and span.text == sample.summary[span.start:span.end], (span.start, span.end, span.text)
    assert span.text.startswith("The 12"), span.text


def test_each_first_pass_shaded_sentence_says_its_p_and_quotes_keep_their_offsets(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    first = scene.queue_order[0]
    scene.first_judgements[1].sentence_scores = [0.05, 0.97]
    scene.first_judgements[1].save(update_fields=["sentence_scores"])
    # A quote in the second sentence: its passage lies after the first sentence's words.
    scene.explanations[1].reasoning = "It says 'The repairs cost 12.4 million euros', as the source does."
    scene.explanations[1].save(update_fields=["reasoning"])
    open_audit(page, live_server, log_in, scene, first)
    output = page.locator('[data-role="summary"]')
    expect(output.locator("[data-first-pass]")).to_have_count(2)

    node, texts = accessible_texts(page, '[data-role="summary"]')
    assert role_and_name(node) == ("group", "Output text")
    assert [text for text in texts if text.startswith("(first pass")] == [
        "(first pass: p = 0.050)", "(first pass: p = 0.970)",
    ], texts
    expect(output).to_have_text(first.sample.summary)
    assert output.text_content() == first.sample.summary
    # Every quoted passage still sits at its code points: the text before it is the output's text before them.
    marks = output.locator('[data-role="quote"]')
    expect(marks).to_have_text(["The repairs cost 12.4 million euros"])
    for i in range(marks.count()):
        before = marks.nth(i).evaluate("""(mark) => {
          const range = document.createRange();
          range.setStart(mark.closest('[data-role="summary"]'), 0);
          range.setEndBefore(mark);
          return range.toString();
        }""")
        assert before == first.sample.summary[: int(marks.nth(i).get_attribute("data-start"))]

    hidden = page.evaluate(AFTER_BOXES, '[data-role="summary"] [data-first-pass]')
    assert all(box["position"] == "absolute" and box["width"] == "1px" for box in hidden), hidden
    page.locator('[data-role="source"]').focus()
    page.keyboard.press("Tab")
    expect(output).to_be_focused()
    shown = page.evaluate(AFTER_BOXES, '[data-role="summary"] [data-first-pass]')
    assert all(box["position"] == "static" and box["width"] != "1px" for box in shown), shown


# ---------- reflow: the audit page's flag and judge lines ----------


def long_item(scene: AuditScene, project: Project, batch: Batch) -> AuditItem:
    """An output flagged with a long reason, served first (score 1 sits below every other flag)."""
    sample = Sample.objects.create(
        project=project, passage=scene.samples[0].passage, batch=batch, position=9, external_id="long",
        summary="The bridge reopened after nine weeks.", generator="model-z",
    )
    flagged_by = judge_sample(make_run(make_judge(project, "cheap-first")), sample, score=1)
    judge_sample(make_run(scene.explainer), sample, score=2, reasoning="It says 'nine weeks'.")
    return flag(sample, flagged_by, reason=LONG_REASON)


@pytest.mark.parametrize(("width", "height"), [(683, 384), (800, 600), (960, 700)])
def test_the_flag_and_judge_lines_wrap_whole_at_200_percent_zoom_and_on_tablets(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch, width: int, height: int
) -> None:
    scene = build_scene(project, batch)
    scene.explainer.name = LONG_JUDGE
    scene.explainer.save(update_fields=["name"])
    item = long_item(scene, project, batch)
    page.set_viewport_size({"width": width, "height": height})
    open_audit(page, live_server, log_in, scene, item)
    expect(page.locator('[data-role="flag-reason"]')).to_have_text(LONG_REASON.strip())

    for selector in ("#audit-view .audit-why", '[data-role="quotes-owner"]'):
        box = page.evaluate(LINES, selector)
        assert box["scrollWidth"] <= box["clientWidth"], f"{selector} is cut short at {width} px: {box}"
        assert box["scrollHeight"] <= box["clientHeight"], f"{selector}'s lines are clipped at {width} px: {box}"
        assert box["left"] >= 0 and box["right"] <= box["windowWidth"], f"{selector} runs off screen: {box}"
        assert box["pageWidth"] <= box["windowWidth"], f"the page scrolls sideways at {width} px: {box}"
    assert page.evaluate(LINES, "#audit-view .audit-why")["lines"] >= 2, "the long reason fitted one line: proves nothing"


def test_the_flag_line_stays_one_line_beside_the_judge_line_at_1366x768(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    item = long_item(scene, project, batch)
    page.set_viewport_size(LAPTOP)
    open_audit(page, live_server, log_in, scene, item)
    why = page.evaluate(LINES, "#audit-view .audit-why")
    owner = page.evaluate(LINES, '[data-role="quotes-owner"]')
    assert why["lines"] == 1 and owner["lines"] == 1, (why, owner)
    # The reason is what gives way (who wrote the output and the sample's number stay whole beside it).
    reason = page.evaluate(LINES, "#audit-view .audit-why > .why-main")
    assert reason["scrollWidth"] > reason["clientWidth"], f"the long reason was not cut short at 1366 px: {reason}"
    assert owner["left"] > why["right"] - 1, f"the judge line left the flag line's row: {why} {owner}"


# ---------- the span page's toolbar at 200% zoom ----------


def test_at_200_percent_zoom_the_toolbar_scrolls_away_and_covers_no_focused_control(
    zoomed_page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    page = zoomed_page
    log_in(page, alice)
    open_sample(page, live_server, sample)
    toolbar = page.locator("#annotator > .toolbar")
    assert toolbar.evaluate("(el) => getComputedStyle(el).position") != "sticky"
    page.mouse.wheel(0, 400)
    page.wait_for_function("() => scrollY > 0")
    assert toolbar.evaluate("(el) => el.getBoundingClientRect().bottom") <= 0, "the toolbar stayed in the window"

    page.evaluate("() => window.scrollTo(0, 0)")
    page.locator("body").focus()
    covered = []
    for _ in range(25):
        page.keyboard.press("Tab")
        if (what := page.evaluate(FOCUS_COVERED)) is not None:
            covered.append(what)
    assert covered == [], f"controls hidden under something when the Tab key reached them: {covered}"


def test_at_1366x768_the_toolbar_stays_sticky_on_one_row(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    page.set_viewport_size(LAPTOP)
    log_in(page, alice)
    open_sample(page, live_server, sample)
    toolbar = page.locator("#annotator > .toolbar")
    assert toolbar.evaluate("(el) => getComputedStyle(el).position") == "sticky"
    assert toolbar.evaluate("(el) => el.getBoundingClientRect().height") < 60
