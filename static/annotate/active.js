/* The active span: chosen (and its list item shown), stepped through with Alt+arrows, or cleared. */

import { activeSpan, page, sides, state, visibleSpans } from "./state.js";
import { notice } from "./feedback.js";
import { updateSelectionHint } from "./hint.js";
import { requestSimilarity, resetSimilarity } from "./shading.js";
import { renderAll, revealActive, spanList } from "./spans.js";
import { scrollToShow } from "./dom.js";
import { flushNote } from "./actions.js";

export function setActive(span, options) {
  const previous = activeSpan();
  if (previous && previous !== span) flushNote(previous);
  state.activeKey = span ? span.key : null;
  renderAll({ syncNote: true });
  if (span) {
    showListItem(span);
    if (!(options && options.keepShading)) requestSimilarity({ side: "summary", start: span.start, end: span.end });
  }
}

/* The span's list item in view in the list's own box, never by scrolling the window: at 200% zoom the page flows in
 * one column and scrollIntoView moved it ~400 px on every label key, taking the summary, the new span and the caret
 * off screen. On a wide screen the summary column is a box of its own: it scrolls the least that shows the item, the
 * span's words in the summary kept in view first. */
function showListItem(span) {
  const item = spanList.querySelector(`[data-span-key="${span.key}"]`);
  if (!item) return;
  scrollToShow(spanList, [item]);
  const column = spanList.closest(".column-summary");
  if (column && getComputedStyle(column).overflowY !== "visible") {
    scrollToShow(column, [item, sides.summary.el.querySelector(".seg.active")]);
  }
}

/* The keys that choose the next or previous span (Alt+arrows: no label hotkey, a single character, can take them). */
export const SPAN_KEYS = "Alt+↓ / Alt+↑";

/* Alt+Down / Alt+Up: the next or previous span in the summary's order becomes the active one (with none active,
 * the first or the last). Returns the span chosen, or null at either end, saying so. */
export function stepActive(step) {
  const spans = visibleSpans();
  if (!spans.length) {
    // A read-only page takes no new span: its words are those of its empty list.
    const words = page.can_edit
      ? "No spans yet: select words in the summary, then press a label key."
      : "No spans in this round.";
    notice(words, "info");
    return null;
  }
  const at = spans.findIndex((span) => span.key === state.activeKey);
  const next = at < 0 ? (step > 0 ? 0 : spans.length - 1) : at + step;
  if (next < 0 || next >= spans.length) {
    notice(step > 0 ? "This is the last span of the summary." : "This is the first span of the summary.", "info");
    return null;
  }
  // As a click in the list does: selected words would make the next label key save a new span rather than relabel
  // the span just chosen. The caret stays where it was.
  const selection = window.getSelection();
  if (selection && selection.rangeCount && !selection.isCollapsed) selection.collapse(selection.focusNode, selection.focusOffset);
  setActive(spans[next]);
  revealActive();
  return spans[next];
}

export function clearAll() {
  window.getSelection().removeAllRanges();
  resetSimilarity();
  state.preview = null;
  if (state.activeKey) setActive(null);
  else renderAll();
  updateSelectionHint(null);
}
