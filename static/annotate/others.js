/* Round 2: another annotator's span copied as one's own, or shown in the texts (stepped through with Alt+arrows). */

import { makeSpan, others, sameValue, state, visibleSpans } from "./state.js";
import { notice } from "./feedback.js";
import { createOnServer, enqueue } from "./saving.js";
import { renderAll, revealPreview } from "./spans.js";
import { setActive } from "./active.js";

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
