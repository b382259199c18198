/* Blind mode and the reveal: switching blind mode, and the score sent to reveal the judges' answers, with the
 * verdict Enter asked to save while that reveal was on its way ("4 then Enter"). */

import { hint, refusedWhileBusy } from "./messages.js";
import { $, shownItem, state, viewState } from "./state.js";

export function toggleBlind() {
  const blindForm = $('[data-role="blind-form"]');
  if (!blindForm || refusedWhileBusy()) return;
  if (viewState() === "change") {
    // The switch answers with the current item: the change on screen would be dropped unsaved, unasked.
    hint("Blind mode is for the outputs served next: save this change (Enter) or go back to your current item (Esc) first.");
    return;
  }
  blindForm.requestSubmit();
}

/* A request starts: a blind-stage verdict form sent is a reveal of the item on screen. */
export function noteReveal(elt) {
  if (elt && elt.matches('[data-role="audit-form"][data-stage="blind"]')) state.revealing = shownItem();
}

/* Enter while a reveal is on its way: the verdict is saved once the judges' answers are in (the form then holds the
 * score), once however often Enter is pressed meanwhile. True when Enter was taken so. */
export function saveOnceRevealed() {
  if (state.revealing === null) return false;
  if (state.saveAfterReveal === null) hint("Saving once the judges' answers are in…", "info");
  state.saveAfterReveal = state.revealing;
  return true;
}

/* The revealed view has settled: the item whose verdict waits to be saved, or null; the reveal is over. */
export function settleReveal() {
  if (state.revealing === null) return null;
  const item = state.saveAfterReveal;
  forgetReveal();
  return item;
}

/* A refused or failed request: the Enter that waited for a reveal saves nothing, and says so. */
export function abandonReveal() {
  if (state.saveAfterReveal !== null) hint("Nothing saved: the judges' answers did not come (see the status).");
  forgetReveal();
}

export function forgetReveal() {
  state.revealing = null;
  state.saveAfterReveal = null;
}
