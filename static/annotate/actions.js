/* What the annotator does to spans: create, relabel, note, link, delete, retry, select. */

import {
  $,
  activeSpan,
  editable,
  forgetSpan,
  leafLabels,
  makeSpan,
  others,
  page,
  sameValue,
  sides,
  state,
  visibleSpans,
} from "./state.js";
import { notice, refusedWhileReadOnly, setStatus } from "./feedback.js";
import { pointAt, readSelection } from "./selection.js";
import { caretSentence, SENTENCE_KEYS } from "./caret.js";
import { shorten, updateSelectionHint } from "./hint.js";
import { requestSimilarity, resetSimilarity } from "./shading.js";
import { createOnServer, deleteOnServer, enqueue, patchOnServer } from "./saving.js";
import { onResendTime } from "./http.js";
import { focusSpanItem, renderAll, renderList, revealActive, revealPreview, spanList } from "./spans.js";
import { scrollToShow } from "./dom.js";

const NOTE_DEBOUNCE_MS = 500;

function createSpan(selection, labelName) {
  const index = sides.summary.index;
  const span = makeSpan({
    start: selection.start,
    end: selection.end,
    text: index.slice(selection.start, selection.end),
    labels: [labelName],
    mine: true,
  });
  state.spans.push(span);
  window.getSelection().removeAllRanges();
  setActive(span, { keepShading: true });
  // The shading asked for the selection is kept, but a label key pressed at once beats that request (the page waits
  // for the selection to settle first): then the new span's own words are asked for, so its source is shaded too.
  // An answer already on its way for the same words is not asked again (requestSimilarity).
  if (!shadingIsFor(span)) requestSimilarity({ side: "summary", start: span.start, end: span.end });
  // A caret at the span's end (after the redraw): Shift+arrows go on to the next words from there, rather than
  // from the start of the summary, so a keyboard annotator needs no click between spans.
  const caret = pointAt(sides.summary.el, index.toU16(span.end));
  window.getSelection().collapse(caret.node, caret.offset);
  enqueue(span, () => createOnServer(span));
}

function changeLabel(span, labelName) {
  if (!editable(span)) return;
  if (sameValue(leafLabels(span.labels), [labelName])) return;
  span.labels = [labelName];
  renderAll();
  enqueue(span, () => patchOnServer(span, { labels: [labelName] }));
}

/* Add the label to the span, or take it away; a span keeps at least one label. */
function toggleLabel(span, labelName) {
  if (!editable(span)) return;
  const leaves = leafLabels(span.labels);
  let labels;
  if (leaves.includes(labelName)) {
    if (leaves.length === 1) {
      notice(`A span needs at least one label: add another before removing ${labelName}, or delete the span.`, "warn");
      return;
    }
    labels = leaves.filter((label) => label !== labelName);
  } else {
    labels = leaves.concat([labelName]);
  }
  span.labels = labels;
  renderAll();
  enqueue(span, () => patchOnServer(span, { labels }));
}

/* A label key or button: a summary selection becomes a span with that label; otherwise the
 * selected span gets that label instead of its labels (add: true adds or removes it). */
export function applyLabel(labelName, options) {
  // The label buttons show it by being disabled; a label key says why nothing happens.
  if (refusedWhileReadOnly()) return;
  const adding = Boolean(options && options.add);
  const selection = readSelection();
  if (selection && selection.side === "summary") return createSpan(selection, labelName);
  const span = activeSpan();
  if (span && editable(span)) return adding ? toggleLabel(span, labelName) : changeLabel(span, labelName);
  notice("Select words in the summary first, then choose a label.", "info");
}

/* ---------- notes ---------- */

export function scheduleNote(span) {
  clearTimeout(span.noteTimer);
  span.noteTimer = setTimeout(() => {
    span.noteTimer = null;
    enqueue(span, () => saveNote(span));
  }, NOTE_DEBOUNCE_MS);
  setStatus();
}

export function flushNote(span) {
  if (!span || span.noteTimer === null) return;
  clearTimeout(span.noteTimer);
  span.noteTimer = null;
  enqueue(span, () => saveNote(span));
}

async function saveNote(span) {
  if (span.note === span.serverNote && span.id) return;
  await patchOnServer(span, { note: span.note });
}

/* ---------- the source link ---------- */

export function setLink(span, start, end) {
  if (!editable(span)) return;
  if (span.source_start === start && span.source_end === end) return;
  span.source_start = start;
  span.source_end = end;
  span.source_text = start === null ? null : sides.source.index.slice(start, end);
  renderAll();
  enqueue(span, () => patchOnServer(span, { source_start: start, source_end: end }));
}

/* L: link the active span to the source selection; with none, to the sentence at the source's caret; with no
 * caret there either, to the closest sentence the shading outlines (pressed again, the next closest one). */
export function linkSelection() {
  if (refusedWhileReadOnly()) return; // not "choose a span first": no span can be linked here
  const span = activeSpan();
  if (!span || !editable(span)) {
    notice(`Choose a span first (click it, or press ${SPAN_KEYS}), then select source text and press L.`, "info");
    return;
  }
  const selection = readSelection();
  if (selection && selection.side === "source") {
    window.getSelection().removeAllRanges();
    setLink(span, selection.start, selection.end);
    return;
  }
  const sentence = selection ? null : caretSentence("source") || nextClosestSentence(span);
  if (sentence && sentence[0] === span.source_start && sentence[1] === span.source_end) {
    // Pressed again with nothing new to link (one sentence outlined, or the caret's sentence): say so.
    notice(
      "This span is linked to that sentence already, and no other source sentence is outlined as close: select " +
        `source text or put the caret in another source sentence (${SENTENCE_KEYS}), then press L.`,
      "info",
    );
    return;
  }
  if (sentence) {
    setLink(span, sentence[0], sentence[1]);
    updateSelectionHint(null); // "Press L to link the sentence at the caret" is done
    return;
  }
  if (!selection && page.embeddings_ready && !shadingIsFor(span)) {
    // The shading is for other words (or gone): shade the source for this span, as choosing it does.
    requestSimilarity({ side: "summary", start: span.start, end: span.end });
    notice("Outlining the source sentences closest to this span: press L again to link the closest one.", "info");
    return;
  }
  notice(
    "Select the supporting or contradicting text in the source first, or put the caret in a source sentence " +
      `(Tab to the source, ${SENTENCE_KEYS} between sentences) and press L.`,
    "info",
  );
}

/* Whether the source's shading answers the span's own words (not a selection made since). */
function shadingIsFor(span) {
  const shading = sides.source.shading;
  const query = shading && shading.query;
  return Boolean(query && query.side === "summary" && query.start === span.start && query.end === span.end);
}

/* The closest outlined source sentence after the one the span is linked to (the first when it is linked to none
 * of them), as code points [start, end]; null when the source is not shaded for this span or none is outlined. */
function nextClosestSentence(span) {
  if (!shadingIsFor(span)) return null;
  const sentences = sides.source.sentences;
  const closest = sides.source.shading.closest.filter((i) => sentences[i]);
  if (!closest.length) return null;
  const linked = closest.findIndex((i) => sentences[i][0] === span.source_start && sentences[i][1] === span.source_end);
  return sentences[closest[(linked + 1) % closest.length]];
}

/* ---------- delete, retry, discard ---------- */

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

export function retrySpan(span) {
  span.state = "saving";
  span.error = null;
  renderList();
  if (!span.id) {
    enqueue(span, () => createOnServer(span));
  } else {
    enqueue(span, () =>
      patchOnServer(span, {
        labels: span.labels,
        note: span.note,
        source_start: span.source_start,
        source_end: span.source_end,
      }),
    );
  }
}

/* Every span whose save failed, tried again: all of them by Retry all; on their own (onlyRetryable) only those that
 * failed for the connection, the server or the login session, when the server is heard from again (any request of
 * the page answered 2xx), the browser is back online, the tab comes back into view or gets the focus (logged in again
 * in another tab), or every 30 s (http.js: onResendTime). Returns how many. Nothing is saved twice: the server
 * answers a repeated span with the stored one, and a change carries the version it was made on. */
export function retryFailed(options) {
  if (page.frozen) return 0;
  const onlyRetryable = Boolean(options && options.onlyRetryable);
  const failed = state.spans.filter(
    (span) => span.state === "failed" && !span.deleted && (!onlyRetryable || span.retryable),
  );
  for (const span of failed) retrySpan(span);
  return failed.length;
}
onResendTime(() => retryFailed({ onlyRetryable: true }));

export function discardSpan(span) {
  forgetSpan(span);
  renderAll();
  setStatus();
}

/* ---------- round 2: copy another annotator's span ---------- */

export function copyOther(other) {
  const labels = (other.labels || []).slice();
  // Labels are a set (the server's rule too): the same ones in another order are the same span.
  const sorted = (list) => list.slice().sort();
  const duplicate = visibleSpans().some(
    (span) => span.mine && span.start === other.start && span.end === other.end && sameValue(sorted(span.labels), sorted(labels)),
  );
  if (duplicate) {
    notice("You already have this span with the same labels.", "info");
    return;
  }
  const span = makeSpan({
    start: other.start,
    end: other.end,
    text: other.text,
    labels,
    source_start: other.source_start,
    source_end: other.source_end,
    source_text: other.source_text,
    mine: true,
  });
  state.spans.push(span);
  state.preview = null;
  setActive(span, { keepShading: true });
  enqueue(span, () => createOnServer(span));
}

/* Show another annotator's span (its index in their list) outlined in the texts, or none (null). */
export function previewOther(index) {
  state.preview = index;
  renderAll();
  revealPreview();
}

/* Alt+Down / Alt+Up with the focus in the other annotators' list: show their next or previous span, counted from
 * the focused item (else from the one shown; with neither, the first or the last). Returns its index, or null at
 * either end, saying so. */
export function stepPreview(step, from) {
  const count = others ? others.spans.length : 0;
  if (!count) return null;
  const at = from ?? state.preview;
  const next = at === null ? (step > 0 ? 0 : count - 1) : at + step;
  if (next < 0 || next >= count) {
    notice(step > 0 ? "This is the other annotators' last span." : "This is the other annotators' first span.", "info");
    return null;
  }
  previewOther(next);
  return next;
}

/* ---------- the active span ---------- */

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
