/* htmx's requests on the audit page: the save status while a form is on its way, refused verdicts shown in place
 * (400, 409), failures named in the status (a login session ended or changed in words of its own: what to do, never
 * "check your connection"), and the new view set up once swapped and settled. */

import { forgetGone, offerChange, recordSaved } from "./back.js";
import { abandonReveal, forgetReveal, noteReveal, settleReveal } from "./blind.js";
import { restoreChoice } from "./choice.js";
import { startClock } from "./clock.js";
import { setStatus, showError, showServerMessages } from "./messages.js";
import { restoreQuotes } from "./quotes.js";
import { settleNewItem } from "./settle.js";
import { $, root, shownItem, stage, state, viewState } from "./state.js";
import { markTexts } from "./texts.js";
import { showChoice, submit } from "./verdict.js";
import { controlName, settleView } from "./view.js";
import { heardFromServer } from "../../js/reachable.js";
import { noteRequest, noteSuccess, retryFailed } from "./resend.js";

const ours = (event) => root.contains(event.target) || event.target === document.body;

/* What a request is, for the cue a key pressed meanwhile gets (messages.js). */
function pendingKind(elt) {
  if (!elt || !elt.matches) return "load";
  if (elt.matches('[data-role="audit-form"]')) return elt.dataset.stage === "blind" ? "reveal" : "save";
  if (elt.matches('[data-role="blind-form"]')) return "blind";
  return "load";
}

/* What to do again once the session is right, by what was refused. */
function again(kind) {
  if (kind === "save") return viewState() === "change" ? "press u to change it again" : "press Enter";
  return { reveal: "press your score again", blind: "press b again" }[kind] || "try again";
}

/* The message of Django's 403 page (templates/403.html), or "". */
function refusalText(html) {
  try {
    const found = new DOMParser().parseFromString(html || "", "text/html").querySelector(".error-page .error");
    return found ? found.textContent.trim() : "";
  } catch {
    return "";
  }
}

/* A request refused for the login session's sake (or a 403), for the page to say: ``failure``, a few words for the
 * save status (it holds about 30 characters); ``title``, the whole of it, in the status's title; ``error``, said in
 * the messages' box until the next view where no banner says it. Null for any other answer. The banner at the page's
 * top (static/js/session.js) says what to do for 401 and other_user. Nothing here is lost: no 4xx but 400 and 409 is
 * swapped in, so the verdict stays on screen and in sessionStorage (choice.js). */
function sessionFailure(xhr, kind) {
  const kept = "Nothing was saved, and nothing is lost: what you chose for this output is still on this page.";
  if (xhr.status === 401) {
    return { failure: "logged out", title: `You are logged out: log in again in another tab, then ${again(kind)}. ${kept}` };
  }
  if (xhr.status !== 403) return null;
  if (xhr.getResponseHeader("X-FaithLab-Session") === "other_user") {
    return { failure: "another user logged in", title: xhr.responseText || kept };
  }
  const body = xhr.responseText || "";
  if (/security token|CSRF/i.test(body)) {
    // The form's token no longer matches this browser's (the csrftoken cookie gone, or a form sent without htmx).
    const back = kind === "save" && viewState() === "open" ? " (your choice comes back)" : "";
    const error = "Not saved: the login session changed (logged in or out in another tab?). " +
      `Reload the page${back}, then ${again(kind)}.`;
    return { failure: "session changed: reload", title: error, error };
  }
  if (kind === "load") return null; // a saved verdict no longer one's own: forgetGone below says so
  const reason = refusalText(body);
  const error = `Not saved: ${reason || "not allowed"}${/[.!]$/.test(reason) ? "" : "."} Reload the page to see what you may do.`;
  return { failure: "not allowed", title: error, error };
}

/* The tries of a request that failed are spent (resend.js): the page says so, and that it goes again on its own. */
function gaveUp(kind) {
  state.busy = false;
  state.retrying = false;
  state.pending = null;
  state.failure = "network error (sent again on its own)";
  state.failureTitle = "Not saved yet: the connection or the server failed for 45 s of tries. What you chose is " +
    `still on this page, and it is sent again on its own once the server answers; or ${again(kind)} now.`;
  abandonReveal();
  setStatus(false);
}

export function wireHtmx() {
  // The CSRF token a form carries is replaced by the cookie's current one for every htmx request (js/session.js).
  document.addEventListener("htmx:beforeRequest", (event) => {
    if (!ours(event)) return;
    noteRequest();
    state.busy = true;
    state.retrying = false;
    state.pending = pendingKind(event.detail.elt);
    state.failure = null;
    state.failureTitle = null;
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
    const answer = event.detail.xhr;
    if (answer && answer.status) heardFromServer(answer.status >= 200 && answer.status < 300);
    state.busy = false;
    state.retrying = false;
    if (event.detail.successful && ours(event)) noteSuccess();
    if (!event.detail.successful && !state.failure) {
      const xhr = event.detail.xhr;
      const code = xhr ? xhr.status : 0;
      const kind = state.pending;
      // A dropped connection or a 5xx is tried again in a moment: the page stays busy meanwhile, as while saving.
      const resend = ours(event) ? retryFailed(event.detail, () => gaveUp(kind)) : null;
      if (resend === "retrying") {
        state.busy = true;
        state.retrying = true;
        setStatus(false);
        return;
      }
      const session = code ? sessionFailure(xhr, kind) : null;
      if (session) {
        state.failure = session.failure;
        state.failureTitle = session.title;
        // Logged in again (in another tab), the auditor comes back here: it is sent again then.
        if (resend === "later") state.failureTitle += " It is sent again on its own once you have logged in again.";
        if (session.error) showError(session.error);
      } else {
        state.failure = code ? `the server answered ${code}` : "network error: press Enter to try again";
        if (code && event.detail.pathInfo) forgetGone(event.detail.pathInfo.requestPath, code);
      }
    }
    state.pending = null;
    if (state.failure) abandonReveal();
    setStatus(false);
  });
  document.addEventListener("htmx:sendError", () => {
    if (state.retrying) return; // tried again in a moment (resend.js); afterRequest said so
    state.busy = false;
    state.pending = null;
    state.failure = "network error: press Enter to try again";
    state.failureTitle = null;
    forgetReveal(); // afterRequest came first and said so
    setStatus(false);
  });
  document.addEventListener("htmx:afterSwap", (event) => {
    if (!ours(event)) return;
    // htmx wires the forms of swapped-in content only when the swap settles (htmx's settle delay, 20 ms later).
    // A key pressed in between sent a form htmx did not know yet as a plain POST: the whole page reloaded, and a
    // key pressed while it loaded reached no listener (the first a after the blind swap, unanswered now and then).
    // Wired now, every form the keys send goes through htmx; htmx's own pass at settle finds them wired already.
    const view = $("#audit-view");
    if (view && window.htmx) window.htmx.process(view);
    if (shownItem() !== null && shownItem() !== state.swappedFrom) settleNewItem();
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
