/* A request of the audit page that failed for the connection, the server or the login session is sent again by
 * itself, as the span page's saves are (the shared waits and moments of static/js/reachable.js): after a network
 * error or a 5xx it is tried again for about 45 s, the status saying "Failed — retrying" and the keys waiting as for
 * any request on its way; once those tries are spent, or after a refusal for the login session (logged out, another
 * user logged in), it goes again when the server may take it: back online, the tab back in view or given the focus
 * (after logging in again in another tab), every 30 s. A request of the auditor's own replaces it, and so does
 * another output on screen. The form is sent as it stands, so a verdict goes with what the auditor chose. */

import { onResendTime, waitToRetry } from "../../js/reachable.js";
import { $, shownItem, state } from "./state.js";

let failed = null; // {elt, verb, path, item, attempt, waiting}: the request to send again
let resending = false; // the next request is this module's own, not the auditor's

/* A request starts: one of the auditor's own replaces whatever was waiting to go again. */
export function noteRequest() {
  if (!resending) failed = null;
  resending = false;
}

/* A request went through: nothing waits to go again. */
export function noteSuccess() {
  failed = null;
}

/* Whether a refusal is about the login session, which logging in again (in another tab) puts right. */
const sessionRefused = (xhr) =>
  xhr.status === 401 || (xhr.status === 403 && xhr.getResponseHeader("X-FaithLab-Session") === "other_user");

/* A request failed (htmx:afterRequest). Returns "retrying" when it will be tried again in a moment (the caller
 * keeps the page busy), "later" when it waits for the server to be reachable or the session to be put right (the
 * caller says it failed, and that it goes again on its own), or null when it is not sent again (refused for another
 * reason: the page says why). */
export function retryFailed(detail, onGiveUp) {
  const xhr = detail.xhr;
  const code = xhr ? xhr.status : 0;
  const config = detail.requestConfig || {};
  const path = (detail.pathInfo && detail.pathInfo.requestPath) || config.path;
  const transient = code === 0 || code >= 500;
  if (!path || (!transient && !(xhr && sessionRefused(xhr)))) {
    failed = null;
    return null;
  }
  const verb = String(config.verb || "post").toUpperCase();
  const again = failed && failed.path === path && failed.verb === verb && failed.item === shownItem();
  failed = { elt: detail.elt, verb, path, item: shownItem(), attempt: again ? failed.attempt : 0, waiting: false };
  if (!transient) {
    failed.waiting = true;
    return "later";
  }
  const kept = failed;
  waitToRetry(kept.attempt++).then((more) => {
    if (failed !== kept) return;
    if (more) {
      resend();
      return;
    }
    kept.waiting = true;
    kept.attempt = 0;
    onGiveUp();
  });
  return "retrying";
}

function resend() {
  const request = failed;
  if (!request) return;
  if (shownItem() !== request.item) {
    failed = null; // another output is on screen: what failed was about the one before
    return;
  }
  request.waiting = false;
  resending = true;
  const view = $("#audit-view");
  if (request.elt && request.elt.isConnected && request.elt.matches("form")) {
    request.elt.requestSubmit();
  } else if (view && window.htmx) {
    window.htmx.ajax(request.verb, request.path, { source: view, target: view, swap: "outerHTML" });
  } else {
    resending = false;
  }
}

onResendTime(() => {
  if (failed && failed.waiting && !state.busy) resend();
});
