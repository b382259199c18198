/* What the pair labeling page tells the judge: notices, the save status, the "too fast" cue, progress. */

import { showSaveStatus } from "../../../js/savestatus.js";
import { onRetrying } from "../../http.js";
import { NOTICE_MS, TOO_FAST_MS, els, state } from "./state.js";

let noticeTimer = null;
export function notice(message, kind) {
  clearTimeout(noticeTimer);
  state.undoNoticeFor = null;
  els.notice.textContent = message;
  els.notice.className = "notice " + (kind || "info");
  els.notice.hidden = false;
  noticeTimer = setTimeout(() => (els.notice.hidden = true), NOTICE_MS);
}

/* The undo notice asks for the item to be answered again: once the item changes (its new answer saved, or anything
 * else replacing it), the request is met or moot, and left up it would sit over the next item for seconds. */
export function hideUndoNotice(itemId) {
  if (state.undoNoticeFor === null || state.undoNoticeFor === itemId) return;
  clearTimeout(noticeTimer);
  els.notice.hidden = true;
  state.undoNoticeFor = null;
}

export function setStatus() {
  const { pending, retrying, error, hint } = state.status;
  showSaveStatus(els.status, { saving: pending > 0, retrying: retrying > 0, failure: error, hint: hint || undefined });
}

export function showFailure(failure, hint) {
  els.status.hidden = false; // hidden on a refused page: a failure is always said
  state.status.error = failure;
  state.status.hint = hint || null;
  setStatus();
}

/* A press the page ignored says so, briefly, beside the answers: without it a judge mashing keys saw a few answers
 * saved and the rest vanish. Cleared by the next answer that counts. An item shown a moment ago: too fast. An answer
 * still on its way (for up to 45 s when the connection dropped: it is tried again on its own): still saving, which
 * is the reason, not the judge's speed. */
let tooFastTimer = null;
export function showTooFast() {
  showIgnored("Too fast — that press was ignored. Read the item, then answer.");
}

export function showStillSaving() {
  showIgnored(state.status.retrying > 0
    ? "Still saving your answer (the connection dropped; it is tried again on its own) — that press was ignored."
    : "Still saving your answer — that press was ignored. Answer again once the next item shows.");
}

function showIgnored(words) {
  clearTimeout(tooFastTimer);
  els.tooFast.textContent = words;
  tooFastTimer = setTimeout(hideTooFast, TOO_FAST_MS);
}

export function hideTooFast() {
  clearTimeout(tooFastTimer);
  els.tooFast.textContent = "";
}
onRetrying((change) => {
  state.status.retrying += change;
  setStatus();
});

export function setLeft(count) {
  els.left.textContent = String(count);
  els.leftNoun.textContent = count === 1 ? "item" : "items";
}

/* The API's `left` is the server's one count of items left for the judge (the one on screen included), the figure
 * the project page shows too: shown as it comes, never adjusted here. */
export function setProgress(progress) {
  if (!progress) return;
  els.progress.hidden = false; // hidden while refused (a block); an item served after an unblock brings it back
  if (typeof progress.answered === "number") state.answered = progress.answered;
  if (state.answered !== null) els.answered.textContent = String(state.answered);
  if (typeof progress.left === "number") setLeft(progress.left);
  els.undo.disabled = !state.answered;
}
