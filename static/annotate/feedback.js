/* What the page tells the annotator: passing notices and the save status. */

import { $, state } from "./state.js";

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
  let text;
  let kind;
  if (status.retrying > 0) [text, kind] = ["Failed — retrying", "retrying"];
  else if (status.pending > 0 || notesWaiting()) [text, kind] = ["Saving…", "saving"];
  else if (status.error) [text, kind] = ["Failed: " + status.error, "failed"];
  else if (unsavedSpans()) [text, kind] = ["Failed: some changes are not saved", "failed"];
  else [text, kind] = ["Saved", "saved"];
  statusEl.textContent = text;
  statusEl.dataset.state = kind;
  statusEl.title = kind === "failed" ? text + " — use Retry in the span list, or check your connection" : "";
}
