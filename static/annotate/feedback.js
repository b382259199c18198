/* What the page tells the annotator: passing notices and the save status. */

import { $, state } from "./state.js";
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

const statusEl = $('[data-role="save-status"]');
/* Writes in flight, writes waiting to be retried, and the last write's error. */
export const status = { pending: 0, retrying: 0, error: null };
export const notesWaiting = () => state.spans.some((span) => span.noteTimer !== null);
export const unsavedSpans = () => state.spans.some((span) => span.state === "failed" && !span.deleted);

export function setStatus() {
  showSaveStatus(statusEl, {
    retrying: status.retrying > 0,
    saving: status.pending > 0 || notesWaiting(),
    failure: status.error || (unsavedSpans() ? "some changes are not saved" : null),
    hint: "use Retry in the span list, or check your connection",
  });
}

onRetrying((change) => {
  status.retrying += change;
  setStatus();
});
