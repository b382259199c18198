/* htmx's requests on the audit page: the save status while a form is on its way, refused verdicts shown in place
 * (400, 409), failures named in the status, and the new view set up once swapped and settled. */

import { forgetGone, offerChange, recordSaved } from "./back.js";
import { abandonReveal, forgetReveal, noteReveal, settleReveal } from "./blind.js";
import { restoreChoice } from "./choice.js";
import { startClock } from "./clock.js";
import { setStatus, showServerMessages } from "./messages.js";
import { restoreQuotes } from "./quotes.js";
import { root, shownItem, stage, state } from "./state.js";
import { markTexts } from "./texts.js";
import { showChoice, submit } from "./verdict.js";
import { controlName, settleView } from "./view.js";

const ours = (event) => root.contains(event.target) || event.target === document.body;

/* What a request is, for the cue a key pressed meanwhile gets (messages.js). */
function pendingKind(elt) {
  if (!elt || !elt.matches) return "load";
  if (elt.matches('[data-role="audit-form"]')) return elt.dataset.stage === "blind" ? "reveal" : "save";
  if (elt.matches('[data-role="blind-form"]')) return "blind";
  return "load";
}

export function wireHtmx() {
  document.addEventListener("htmx:beforeRequest", (event) => {
    if (!ours(event)) return;
    state.busy = true;
    state.pending = pendingKind(event.detail.elt);
    state.failure = null;
    noteReveal(event.detail.elt);
    setStatus(event.detail.requestConfig && event.detail.requestConfig.verb !== "get");
  });
  document.addEventListener("htmx:beforeSwap", (event) => {
    if (ours(event)) {
      state.swappedFrom = shownItem();
      state.focusedControl = controlName(document.activeElement);
    }
    // A refused verdict (400 bad input, 409 answered already or not yours) comes with the page saying why.
    const code = event.detail.xhr.status;
    if (code === 400 || code === 409) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
      state.failure = "not saved (see the message)";
    }
  });
  document.addEventListener("htmx:afterRequest", (event) => {
    state.busy = false;
    if (!event.detail.successful && !state.failure) {
      const code = event.detail.xhr ? event.detail.xhr.status : 0;
      state.failure = code ? `the server answered ${code}` : "network error: press Enter to try again";
      if (code && event.detail.pathInfo) forgetGone(event.detail.pathInfo.requestPath, code);
    }
    state.pending = null;
    if (state.failure) abandonReveal();
    setStatus(false);
  });
  document.addEventListener("htmx:sendError", () => {
    state.busy = false;
    state.pending = null;
    state.failure = "network error: press Enter to try again";
    forgetReveal(); // afterRequest came first and said so
    setStatus(false);
  });
  document.addEventListener("htmx:afterSwap", (event) => {
    if (!ours(event)) return;
    recordSaved();
    offerChange();
    restoreChoice();
    showChoice();
    startClock();
    restoreQuotes();
    markTexts();
    showServerMessages();
    settleView(state.swappedFrom, state.focusedControl);
    state.swappedFrom = undefined;
    state.focusedControl = null;
  });
  // htmx wires a swapped-in form when it settles: the waiting verdict is sent then, through htmx like any other.
  document.addEventListener("htmx:afterSettle", (event) => {
    if (!ours(event)) return;
    const item = settleReveal();
    // Only on the item whose judges were revealed, now shown with them: never on another output.
    if (item !== null && stage() === "open" && shownItem() === item) submit();
  });
}
