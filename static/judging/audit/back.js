/* u (or Ctrl/Cmd+Z): back to a saved verdict, to change it. The page keeps the verdicts saved in this tab (this page
 * session: sessionStorage, so a reload keeps them too), the latest saved last; u shows the latest, and u again on a
 * saved verdict the one saved before it, one at a time. Saving a change moves that verdict to the top again, as the
 * "Changed: ..." line's "u to change it" says. The server shows and changes only the auditor's own answered audits
 * (judging/views/audit/saved.py): this list only says which ones to ask for. Esc leaves a saved verdict as it is.
 * The toolbar's Change button is u for a touch or mouse: shown whenever u has a saved verdict to go to. */

import { hint, refusedWhileBusy } from "./messages.js";
import { $, state, viewState } from "./state.js";

// Per user: another user's page in this tab (they logged in meanwhile) would ask for these audits and drop them (403).
const KEY = `faithlab:audit-saved:${document.body.dataset.user || ""}:${location.pathname}`;
const KEPT = 200; // a long session's worth; older ones drop off the bottom

function savedList() {
  try {
    const list = JSON.parse(sessionStorage.getItem(KEY) || "[]");
    return Array.isArray(list) ? list.filter((entry) => entry && entry.audit && entry.url) : [];
  } catch {
    return [];
  }
}

function keep(list) {
  try {
    sessionStorage.setItem(KEY, JSON.stringify(list.slice(-KEPT)));
  } catch {
    // Storage refused: u still works for the verdict the saved line names (below).
  }
}

/* After a swap: a verdict just saved or changed (the saved line names it) goes to the top of the list. */
export function recordSaved() {
  const line = $('[data-role="last-saved"]');
  if (!line || !line.dataset.auditId || !line.dataset.changeUrl) return;
  const entry = { audit: line.dataset.auditId, url: line.dataset.changeUrl };
  keep([...savedList().filter((other) => other.audit !== entry.audit), entry]);
}

/* The saved verdict u goes to from what is on screen now, or null. */
function target() {
  const list = savedList();
  if (viewState() !== "change") return list.length ? list[list.length - 1] : null;
  const shown = $("#audit-view").dataset.auditId;
  const at = list.findIndex((entry) => entry.audit === shown);
  return at > 0 ? list[at - 1] : null;
}

/* Change shows where u would bring a saved verdict back (after a save, after a reload, on a changed verdict with one
 * saved before it) and hides, its room kept (audit.css), where u would only say there is none. */
export function offerChange() {
  const button = $('[data-role="change-saved"]');
  if (button) button.hidden = target() === null;
}

function load(url) {
  const view = $("#audit-view");
  if (!view || !window.htmx) return;
  window.htmx.ajax("GET", url, { source: view, target: view, swap: "outerHTML" });
}

export function goBack() {
  if (refusedWhileBusy()) return;
  const found = target();
  if (found) {
    load(found.url);
    return;
  }
  hint(viewState() === "change"
    ? "No verdict saved before this one in this tab: Enter saves the change, Esc goes back to your current item."
    : "Nothing to change yet: no verdict was saved in this tab. My audits (below the page) lists every one you saved.", "info");
}

/* Esc (or the button) on a saved verdict: back to the current item, the saved verdict left as it is. */
export function leaveChange() {
  if (refusedWhileBusy()) return;
  const link = $('[data-role="leave-change"]');
  if (link) load(link.getAttribute("href"));
}

/* A saved verdict the server no longer shows (its item removed: 404) is dropped from the list, so u goes past it. */
export function forgetGone(path, status) {
  if (state.pending !== "load" || (status !== 404 && status !== 403)) return;
  const list = savedList();
  const kept = list.filter((entry) => entry.url !== path);
  if (kept.length === list.length) return;
  keep(kept);
  offerChange();
  hint("That saved verdict can no longer be shown (its item was removed): u goes on to the one before.");
}
