/* The pair labeling page: one key per answer (h, n, ?), the next item at once, undo with u.
 * The answer's 201 carries the next item, so one round trip saves and serves. Offsets from the
 * API are Unicode code points and go through TextIndex; texts enter the DOM only as text nodes.
 *
 * Split by topic under label/: state (elements, state, timings), feedback (notices, status, progress), settle
 * (when an answer counts), render (an item, the end, a refusal), answering (the API: next, answer, undo), waiting (the
 * end page's own checks for new work). This file wires the controls and keys, and starts the page. */

import { shortcutKey } from "../../js/keys.js";
import { isTyping } from "../../js/typing.js";
import { answer, loadNext, undo } from "./label/answering.js";
import { setProgress, setStatus } from "./label/feedback.js";
import { keepFocusInItem } from "./label/render.js";
import { showAnswerable } from "./label/settle.js";
import { $, LABEL_BY_KEY, api, els, root, state } from "./label/state.js";
import { watchForWork } from "./label/waiting.js";

for (const button of root.querySelectorAll("[data-label]")) {
  button.addEventListener("click", () => answer(button.dataset.label));
}
els.undo.addEventListener("click", () => undo());
$('[data-role="check-again"]').addEventListener("click", () => loadNext().then(keepFocusInItem));

function showGuidelines(show) {
  els.guidelines.open = show === undefined ? !els.guidelines.open : show;
}
els.toggleGuidelines.addEventListener("click", () => showGuidelines());
els.guidelines.addEventListener("toggle", () => {
  els.toggleGuidelines.setAttribute("aria-expanded", String(els.guidelines.open));
});

document.addEventListener("keydown", (event) => {
  if (event.defaultPrevented || event.isComposing) return;
  if (isTyping(event.target)) {
    if (event.key === "Escape") event.target.blur();
    return;
  }
  // Caps Lock or Shift changes no letter here (H is h): none has a Shift meaning of its own (static/js/keys.js).
  const key = shortcutKey(event);
  if ((event.ctrlKey || event.metaKey) && !event.altKey && !event.shiftKey && key === "z") {
    event.preventDefault();
    if (!event.repeat) undo();
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const label = LABEL_BY_KEY[key];
  if (label) {
    event.preventDefault();
    // A held key must not answer the items that follow unseen; answer() drops a press on an unsettled item.
    if (!event.repeat) answer(label);
    return;
  }
  if (key === "u") {
    event.preventDefault();
    if (!event.repeat) undo();
  } else if (key === "g") {
    event.preventDefault();
    showGuidelines();
  } else if (key === "Escape") {
    showGuidelines(false);
  }
});


setStatus();
showAnswerable();
setProgress(api.progress);
// A blocked judge's page comes with the block shown: asking for an item would only be refused.
(api.blocked ? Promise.resolve() : loadNext()).then(() => {
  // A judge who has not answered anything here yet starts with the guidelines open.
  if (state.answered === 0) showGuidelines(true);
  root.classList.add("ready");
});
watchForWork();
