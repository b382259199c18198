/* Done and navigation: D and Done wait for the sample to settle; done, retry-all, prev/next; the leave warning. */

import { $, page, root } from "./state.js";
import { notice, notesWaiting, status, unsavedSpans } from "./feedback.js";
import { retryFailed } from "./actions.js";
import { hideUndo } from "./undo.js";
import { updateSelectionHint } from "./hint.js";
import { go, markDoneAndMoveOn, markNotDone, renderDone, submitAgain } from "./review.js";
import { settleGuard } from "../js/settle.js";

/* D (or the Done button) on a sample shown for less than this is ignored, and the page says so: a quick second press
 * meant for the sample just left would otherwise mark the next one done unread (and, on the last open sample, submit
 * the round). Longer than the pair page's 300 ms: moving on here loads a whole page, which eats part of the gap. */
const DONE_SETTLE_MS = 700;

/* The sample has just appeared: D and Done wait (static/js/settle.js), saying so; the root's data-settled tells
 * tests when they count. */
export const doneSettle = settleGuard({
  ms: DONE_SETTLE_MS,
  refused: () => notice("Not marked done: this sample has only just appeared. Read it, then press D again.", "info"),
  changed: (settled) => (root.dataset.settled = String(settled)),
});

/* D and Done: ignored (saying so) while the sample has just appeared. */
export function doneIfSettled() {
  if (doneSettle.refuses()) return;
  markDoneAndMoveOn();
}

export function wireDone() {
  // A page restored by Back or Forward (the browser's page cache) is a sample appearing too.
  window.addEventListener("pageshow", (event) => {
    if (event.persisted) doneSettle.restart();
  });

  const doneButton = $('[data-role="done"]');
  if (doneButton) doneButton.addEventListener("click", doneIfSettled);
  const retryAllButton = $('[data-role="retry-all"]');
  if (retryAllButton) retryAllButton.addEventListener("click", () => retryFailed());
  const notDoneButton = $('[data-role="mark-not-done"]');
  if (notDoneButton) notDoneButton.addEventListener("click", markNotDone);
  const submitAgainButton = $('[data-role="submit-again"]');
  if (submitAgainButton) submitAgainButton.addEventListener("click", submitAgain);
  root.addEventListener("annotate:frozen", () => {
    renderDone();
    hideUndo();
    updateSelectionHint(null);
  });
  for (const [role, url] of [
    ["prev", page.prev_url],
    ["next", page.next_url],
  ]) {
    const link = $(`[data-role="${role}"]`);
    if (!link) continue;
    link.addEventListener("click", (event) => {
      event.preventDefault();
      go(url);
    });
  }

  window.addEventListener("beforeunload", (event) => {
    if (page.frozen) return; // nothing more can be saved: no reason to hold the annotator here
    if (status.pending > 0 || notesWaiting() || unsavedSpans()) {
      event.preventDefault();
      event.returnValue = "";
    }
  });
}
