/* The hint under the summary: what the selection or the caret lets the annotator do next. */

import { $, activeSpan, editable, labelByHotkey, page } from "./state.js";
import { caretSentence } from "./caret.js";
import { make } from "./dom.js";

export const shorten = (text, max) => (text.length > max ? text.slice(0, max - 1) + "…" : text);

const hintEl = $(".column-summary .hint");
const defaultHint = hintEl ? hintEl.textContent : "";
const hotkeyRange = () => {
  const keys = Object.keys(labelByHotkey);
  return keys.length > 1 ? `${keys[0]}–${keys[keys.length - 1]}` : keys[0] || "a label key";
};

/* A caret in the focused source whose sentence is not already the active span's link (after a click linked it,
 * L would change nothing). */
function caretCanLink() {
  const span = activeSpan();
  const sentence = span && editable(span) ? caretSentence("source") : null;
  return Boolean(sentence && (sentence[0] !== span.source_start || sentence[1] !== span.source_end));
}

export function updateSelectionHint(selection) {
  if (!hintEl) return;
  if (selection && selection.side === "summary" && page.can_edit) {
    // The instruction first: the hint keeps one line (a longer quote is cut with "…"), so the span list
    // below never jumps by a line as the selection grows and shrinks.
    // The words in a bdi: right-to-left ones keep their quote marks around them.
    hintEl.replaceChildren(
      `Press ${hotkeyRange()} or click a label to save “`,
      make("bdi", null, shorten(selection.text, 60)),
      "”.",
    );
  } else if (selection && selection.side === "source" && activeSpan() && editable(activeSpan())) {
    hintEl.textContent = "Source text selected — press L to link it to the selected span.";
  } else if (!selection && caretCanLink()) {
    hintEl.textContent = "Press L to link the source sentence at the caret to the selected span.";
  } else {
    // The round may have frozen since the page loaded.
    hintEl.textContent = page.can_edit ? defaultHint : "Select words to shade the similar source sentences.";
  }
}
