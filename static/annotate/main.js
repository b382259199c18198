/* FaithLab annotation page, the entry module: wires the page's listeners, in the order they must run, and starts it.
 * Plain JavaScript ES modules, no framework, no build step. The wiring: controls.js (texts, buttons, lists), done.js
 * (D and Done, prev/next), keys.js (shortcuts); what they call: actions.js, active.js, undo.js, others.js (spans). */

import { page, root, sides } from "./state.js";
import { setStatus } from "./feedback.js";
import { pointAt } from "./selection.js";
import "./caret.js"; // evaluated here, before shading.js and spans.js, so its listeners (resize) keep their place
import { showSimilarityNote } from "./shading.js";
import { renderAll, renderOthersSummary } from "./spans.js";
import { renderDone } from "./review.js";
import { initFlag } from "./flag.js";
import { showCueLegend } from "./cues.js";
import { wireControls, wireSelection } from "./controls.js";
import { doneSettle, wireDone } from "./done.js";
import { wireKeys } from "./keys.js";

wireSelection();
wireControls();
wireDone();
wireKeys();

/* ---------- start ---------- */

/* Keyboard first: the summary holds the focus as the sample appears, with the caret at its start, so the caret and
 * selection keys (Ctrl+→, Shift+→) work at once, with no click or Tabs on every sample. Nothing scrolls; a focus
 * taken while the page loaded (a click) is left where it is. */
function focusSummaryAtStart() {
  const active = document.activeElement;
  if (active && active !== document.body) return;
  const summary = sides.summary.el;
  summary.focus({ preventScroll: true });
  const selection = window.getSelection();
  if (selection && !(selection.rangeCount && summary.contains(selection.focusNode))) {
    const start = pointAt(summary, 0);
    selection.collapse(start.node, start.offset);
  }
}

if (!page.embeddings_ready) showSimilarityNote();
renderOthersSummary();
showCueLegend(root);
renderAll({ syncNote: true });
renderDone();
initFlag();
setStatus();
focusSummaryAtStart();
doneSettle.restart();
root.classList.add("ready");
