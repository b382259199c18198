/* Deleting a span, and bringing the last deleted ones back (the Undo toast, Ctrl+Z). */

import { $, editable, makeSpan, page, sides, state, visibleSpans } from "./state.js";
import { shorten } from "./hint.js";
import { createOnServer, deleteOnServer, enqueue } from "./saving.js";
import { focusSpanItem, renderAll, spanList } from "./spans.js";
import { setActive } from "./active.js";

export function deleteSpan(span) {
  if (!editable(span)) return;
  const spans = visibleSpans();
  const at = spans.indexOf(span);
  const neighbour = spans[at + 1] || spans[at - 1] || null;
  const focusWasInList = spanList.contains(document.activeElement);
  clearTimeout(span.noteTimer);
  span.noteTimer = null;
  span.deleted = true;
  if (state.activeKey === span.key) state.activeKey = null;
  renderAll();
  // The focus was on the deleted span's item or on the editor's Delete button, both gone now: keep it on the
  // span list (the next span's item) or on the summary, never on the page's start.
  const keptInList = Boolean(focusWasInList && neighbour && focusSpanItem(neighbour.key));
  if (!keptInList && (focusWasInList || focusIsLost())) sides.summary.el.focus({ preventScroll: true });
  rememberDeleted(span);
  enqueue(span, () => deleteOnServer(span)).then(() => {
    // The delete was refused (a newer version, a frozen round): nothing to undo.
    if (!span.deleted) forgetDeleted(span);
  });
}

/* ---------- undo a deletion ---------- */

const UNDO_DEPTH = 5;
const UNDO_TOAST_MS = 10000;
const deletedSpans = []; // the last few deleted spans, newest last
const undoToast = $('[data-role="undo-toast"]');
const undoText = $('[data-role="undo-text"]');
let undoTimer = null;

function rememberDeleted(span) {
  deletedSpans.push(span);
  if (deletedSpans.length > UNDO_DEPTH) deletedSpans.shift();
  undoText.textContent = `Deleted “${shorten(span.text, 40)}”.`;
  undoToast.hidden = false;
  clearTimeout(undoTimer);
  undoTimer = setTimeout(hideUndo, UNDO_TOAST_MS);
}

function forgetDeleted(span) {
  const at = deletedSpans.indexOf(span);
  if (at >= 0) deletedSpans.splice(at, 1);
  if (!deletedSpans.length) hideUndo();
}

/* Whether the focus fell to the page's body, or is about to: the element that holds it was removed or hidden (the
 * browser moves the focus to the body at its next redraw). */
export function focusIsLost() {
  const el = document.activeElement;
  return !el || el === document.body || !el.isConnected || Boolean(el.closest("[hidden]"));
}

export function hideUndo() {
  clearTimeout(undoTimer);
  undoToast.hidden = true;
}

/* Recreate the last deleted span: same offsets, labels, note and source link, a new id. */
export function undoDelete() {
  if (!page.can_edit || !deletedSpans.length) return false;
  const gone = deletedSpans.pop();
  hideUndo();
  const span = makeSpan({
    start: gone.start,
    end: gone.end,
    text: gone.text,
    labels: gone.labels.slice(),
    note: gone.note,
    source_start: gone.source_start,
    source_end: gone.source_end,
    source_text: gone.source_text,
    mine: true,
  });
  state.spans.push(span);
  setActive(span, { keepShading: true });
  // The Undo button hides, and a Delete may have left the focus on the page: the span that came back takes it.
  if (focusIsLost() || undoToast.contains(document.activeElement) || spanList.contains(document.activeElement)) {
    focusSpanItem(span.key);
  }
  // After the delete has reached the server: the same span saved while the old one
  // still exists would be answered with the old one, which the delete then removes.
  const deleted = gone.queue;
  enqueue(span, async () => {
    await deleted;
    await createOnServer(span);
  });
  return true;
}
