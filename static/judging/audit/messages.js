/* Feedback on the audit page: the save status, the hints a refused key gets, and the server's messages, all in
 * a box laid over the toolbar's words. */

import { showSaveStatus } from "../../js/savestatus.js";
import { $, state } from "./state.js";

const HINT_MS = 6000;

export function setStatus(saving) {
  const el = $('[data-role="save-status"]');
  if (!el) return;
  const options = { saving, retrying: state.retrying, failure: state.failure };
  if (state.failureTitle) options.hint = state.failureTitle; // a session's refusal: not "check your connection"
  showSaveStatus(el, options);
}

/* The messages' box lies over the toolbar's words: from its left edge to the first control of the controls' row, or,
 * when the controls have a row of their own (a narrow window), over the rows above it. Sized whenever a message
 * shows, so it follows the toolbar's wrapping. */
export function placeMessages() {
  const box = $('[data-role="messages"]');
  const bar = box && box.parentElement;
  if (!bar) return;
  const barBox = bar.getBoundingClientRect();
  const children = [...bar.children].filter((el) => el !== box);
  const controls = children
    .filter((el) => el.matches('[data-role="save-status"], form, button'))
    .map((el) => el.getBoundingClientRect())
    .filter((rect) => rect.width > 0);
  // The first row ends where the toolbar's first words (the progress) end.
  const firstRowEnd = children.length ? children[0].getBoundingClientRect().bottom : barBox.bottom;
  const topRow = controls.filter((rect) => rect.top < firstRowEnd);
  const below = controls.filter((rect) => rect.top >= firstRowEnd);
  const gap = 6;
  const width = topRow.length ? Math.min(...topRow.map((rect) => rect.left)) - barBox.left - gap : barBox.width - 2;
  const height = below.length ? Math.min(...below.map((rect) => rect.top)) - barBox.top - gap / 2 : barBox.height - 2;
  box.style.setProperty("--message-width", `${Math.max(0, Math.floor(width))}px`);
  box.style.setProperty("--message-height", `${Math.max(0, Math.floor(height))}px`);
}

let hintTimer = null;
export function hint(message, kind = "warn") {
  const el = $('[data-role="hint"]');
  if (!el) return;
  clearTimeout(hintTimer);
  el.textContent = message;
  el.className = `notice ${kind}`;
  el.hidden = false;
  placeMessages();
  hintTimer = setTimeout(() => (el.hidden = true), HINT_MS);
}

/* The server's own notice (blind mode switched on an item already shown) goes away as a hint does; an error stays
 * until the next answer replaces the view. */
let noticeTimer = null;
export function showServerMessages() {
  placeMessages();
  clearTimeout(noticeTimer);
  const notice = $('[data-role="notice"]');
  if (notice) noticeTimer = setTimeout(() => (notice.hidden = true), HINT_MS);
}

/* A refusal the page names itself (no view came with it: a 403): shown as the server's errors are, until the next
 * view replaces it. */
export function showError(message) {
  const box = $('[data-role="messages"]');
  if (!box) return;
  let el = box.querySelector('[data-role="error"]');
  if (!el) {
    el = document.createElement("p");
    el.className = "notice warn";
    el.setAttribute("role", "alert");
    el.dataset.role = "error";
    box.prepend(el);
  }
  el.textContent = message;
  el.hidden = false;
  placeMessages();
}

const WAIT_CUES = {
  save: "Saving… press again when the next item shows.",
  reveal: "Showing the judges' answers… press again when they show.",
  blind: "Switching blind mode… press again when the page has updated.",
  load: "Loading… press again when the item shows.",
};

/* A key or click that would act while a request is on its way does nothing: on the output it names it would land on
 * the next one, unread. Said, so that a dropped key is no mystery. True when the page is busy (the caller stops). */
export function refusedWhileBusy() {
  if (!state.busy) return false;
  hint(WAIT_CUES[state.pending] || WAIT_CUES.load, "info");
  return true;
}
