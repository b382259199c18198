/* What the page tells the annotator: passing notices and the save status. */

import { $, page, state } from "./state.js";
import { onRetrying } from "./http.js";
import { showSaveStatus } from "../js/savestatus.js";

const NOTICE_MS = 8000;

const noticeEl = $('[data-role="notice"]');
let noticeTimer = null;

export function notice(message, kind, sticky) {
  clearTimeout(noticeTimer);
  noticeEl.textContent = message;
  noticeEl.className = "notice " + (kind || "info");
  noticeEl.hidden = false;
  if (!sticky) noticeTimer = setTimeout(() => (noticeEl.hidden = true), NOTICE_MS);
}

/* Every key that would change something (a label key, E, L, Delete, Shift+D, Ctrl+Z, D on a sample not done), on a
 * page that takes no changes (a frozen round, or someone's read-only view): says why nothing happens, in the same
 * words whichever key it was, and changes nothing. True when it refused (the caller stops). The buttons show it by
 * being disabled or hidden. */
export function refusedWhileReadOnly() {
  if (page.can_edit) return false;
  notice(
    page.frozen
      ? `Nothing was saved: this round is read-only. ${page.frozen}`
      : `Nothing was saved: this is a read-only view of round ${page.round}.`,
    "warn",
  );
  return true;
}

const statusEl = $('[data-role="save-status"]');
/* Writes in flight, writes waiting to be retried, and the last write's error. */
export const status = { pending: 0, retrying: 0, error: null };
export const notesWaiting = () => state.spans.some((span) => span.noteTimer !== null);
export const unsavedSpans = () => state.spans.some((span) => span.state === "failed" && !span.deleted);

const retryAllButton = $('[data-role="retry-all"]');

/* Why a span waits unsaved (logged out, the server's refusal), once later writes have gone through. */
function unsavedReason() {
  const failed = state.spans.find((span) => span.state === "failed" && !span.deleted);
  return failed ? failed.error || "some changes are not saved" : null;
}

export function setStatus() {
  showSaveStatus(statusEl, {
    retrying: status.retrying > 0,
    saving: status.pending > 0 || notesWaiting(),
    failure: status.error || unsavedReason(),
    hint: "press Retry all (or Retry in the span list), or check your connection; failed saves are also tried " +
      "again on their own",
  });
  // Beside the status while a span waits unsaved (a frozen round refuses every write: nothing to retry).
  if (retryAllButton) retryAllButton.hidden = !(unsavedSpans() && !page.frozen);
}

onRetrying((change) => {
  status.retrying += change;
  setStatus();
});
