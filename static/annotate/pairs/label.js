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
  button.addEventListener("click", () => answer(button.dataset.label).then(backToItem));
}
els.undo.addEventListener("click", () => undo().then(backToItem));
$('[data-role="check-again"]').addEventListener("click", () => loadNext().then(keepFocusInItem));

/* The guidelines sit under the item, below the fold on a laptop screen: opened (g, the toolbar's button, a new
 * judge's first visit) they are brought into view, or g would seem to do nothing; closed, the page goes back to where
 * it was, the item in view again (as ? on the audit page). */
let scrollBeforeGuidelines = null;
function showGuidelines(show) {
  const open = show === undefined ? !els.guidelines.open : show;
  if (open === els.guidelines.open) return;
  els.guidelines.open = open;
  if (open) {
    scrollBeforeGuidelines = window.scrollY;
    els.guidelines.scrollIntoView({ block: "nearest" });
  } else {
    backToItem();
  }
}

/* An answer (or an undo) given while the guidelines were brought into view shows the next item where the judge can
 * read it: the page goes back to where it was before (the guidelines stay open). */
function backToItem() {
  if (scrollBeforeGuidelines === null) return;
  window.scrollTo({ top: scrollBeforeGuidelines, behavior: "instant" });
  scrollBeforeGuidelines = null;
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
    if (!event.repeat) undo().then(backToItem);
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const label = LABEL_BY_KEY[key];
  if (label) {
    event.preventDefault();
    // A held key must not answer the items that follow unseen; answer() drops a press on an unsettled item.
    if (!event.repeat) answer(label).then(backToItem);
    return;
  }
  if (key === "u") {
    event.preventDefault();
    if (!event.repeat) undo().then(backToItem);
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
