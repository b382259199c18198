/* What the annotator does to a span's content: create, relabel, note, link; retry or discard a failed save. */

import { activeSpan, editable, forgetSpan, leafLabels, makeSpan, page, sameValue, sides, state } from "./state.js";
import { notice, refusedWhileReadOnly, setStatus } from "./feedback.js";
import { pointAt, readSelection } from "./selection.js";
import { caretSentence, SENTENCE_KEYS } from "./caret.js";
import { updateSelectionHint } from "./hint.js";
import { requestSimilarity } from "./shading.js";
import { createOnServer, enqueue, patchOnServer } from "./saving.js";
import { onResendTime } from "./http.js";
import { renderAll, renderList } from "./spans.js";
import { setActive, SPAN_KEYS } from "./active.js";

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

/* ---------- retry, discard ---------- */

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
