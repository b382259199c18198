/* The verdict chosen and not saved yet (score or agree, reasoning wrong, note) survives a reload of the page: kept in
 * sessionStorage (this tab only) for the item on screen, put back when that item is shown again, dropped once another
 * item is served (the verdict was saved, or the serve went elsewhere).
 *
 * Only the open stage keeps one. In blind mode a score is sent at once to reveal the judges, and the server keeps it
 * (judging/services/audits/blind.py), so a reload shows it already; a choice changed after the reveal
 * is kept here and wins over the server's echo, being the later one. A saved verdict brought back with u (change) keeps
 * nothing here: the current item's choice waits for the auditor to come back to it. */

import { hint } from "./messages.js";
import { form, shownItem, viewState } from "./state.js";

// Per user as well: after another user logged in (another tab) and this one reloaded, their page must not drop the
// choice kept here, which is back once the first user logs in again in this tab.
const KEY = `faithlab:audit-choice:${document.body.dataset.user || ""}:${location.pathname}`;

function read() {
  try {
    const entry = JSON.parse(sessionStorage.getItem(KEY) || "null");
    return entry && typeof entry === "object" ? entry : null;
  } catch {
    return null; // storage refused (private mode) or a value not ours: nothing to restore
  }
}

function write(entry) {
  try {
    if (entry) sessionStorage.setItem(KEY, JSON.stringify(entry));
    else sessionStorage.removeItem(KEY);
  } catch {
    // Storage full or refused: the choice just does not survive a reload, as before.
  }
}

/* The form as it stands now, kept for the item on screen (open stage only). */
export function rememberChoice() {
  const f = form();
  if (!f || viewState() !== "open") return;
  const box = f.querySelector('[data-role="reasoning-wrong"]');
  const note = f.querySelector('[data-role="note"]');
  write({
    item: shownItem(),
    score: f.querySelector('[data-role="score-input"]').value,
    agreed: f.querySelector('[data-role="agreed-input"]').value === "1",
    reasoningWrong: Boolean(box && box.checked),
    note: note ? note.value : "",
  });
}

/* Typing in the note, and ticking the checkbox with the mouse, are part of the choice too. */
export function wireChoiceMemory(root) {
  root.addEventListener("input", (event) => {
    if (event.target.matches && event.target.matches('[data-role="note"]')) rememberChoice();
  });
  root.addEventListener("change", (event) => {
    if (event.target.matches && event.target.matches('[data-role="reasoning-wrong"]')) rememberChoice();
  });
}

/* After a load or a swap: the kept choice goes back into the form of its item; one for another item is dropped,
 * unless a saved verdict is on screen to be changed (the current item comes back after it). ``announce``: say so (a
 * reload). True when a choice was put back. */
export function restoreChoice({ announce = false } = {}) {
  const entry = read();
  if (!entry) return false;
  const state = viewState();
  if (state === "change") return false;
  if (entry.item !== shownItem()) {
    write(null);
    return false;
  }
  const f = form();
  if (!f || state !== "open") return false;
  const agreeScore = f.dataset.agreeScore;
  const scoreInput = f.querySelector('[data-role="score-input"]');
  const agreedInput = f.querySelector('[data-role="agreed-input"]');
  if (entry.agreed && agreeScore) {
    scoreInput.value = agreeScore;
    agreedInput.value = "1";
  } else if (/^[1-5]$/.test(entry.score || "")) {
    scoreInput.value = entry.score;
    agreedInput.value = "";
  }
  const box = f.querySelector('[data-role="reasoning-wrong"]');
  if (box && !box.disabled) box.checked = Boolean(entry.reasoningWrong);
  const note = f.querySelector('[data-role="note"]');
  if (note && typeof entry.note === "string") note.value = entry.note;
  if (announce && scoreInput.value) {
    const what = agreedInput.value === "1" ? `agree (${scoreInput.value})` : `score ${scoreInput.value}`;
    hint(`Your unsaved choice for this output is back: ${what}. Enter saves it.`, "info");
  }
  return true;
}
