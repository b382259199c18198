/* Marking the sample done, moving between samples, and the time spent on the page. */

import { $, make, page, state } from "./state.js";
import { notice, refusedWhileReadOnly, setStatus, status, unsavedSpans } from "./feedback.js";
import { PATIENT_RETRY_DELAYS_MS, errorMessage, jsonHeaders, send } from "./http.js";
import { freeze, isFrozenAnswer } from "./saving.js";
import { readyToLeave, settle } from "./leaving.js";

/* ---------- time spent: only while the tab is visible ---------- */

/* Every visit's time counts, once: D sends it with the review; leaving the sample any other way (the sample keys and
 * links, a reload, closing the tab) sends it on its own (sendTimeSpent), and so does the tab being hidden, since a
 * phone may discard a hidden tab without a pagehide. The clock stops while the tab is hidden: time in another tab or
 * window is not counted. A read-only or frozen page sends nothing: a submitted round's times are final. */
let visibleSince = document.hidden ? null : performance.now();
let visibleMs = 0;
document.addEventListener("visibilitychange", () => {
  if (document.hidden && visibleSince !== null) {
    visibleMs += performance.now() - visibleSince;
    visibleSince = null;
  } else if (!document.hidden && visibleSince === null) {
    visibleSince = performance.now();
  }
  if (document.hidden) sendTimeSpent();
});
window.addEventListener("pagehide", () => {
  leaving = true;
  sendTimeSpent();
});
// A page restored by Back or Forward (the browser's page cache) starts a new visit: its time in the cache is none.
window.addEventListener("pageshow", (event) => {
  if (!event.persisted) return;
  leaving = false;
  visibleMs = 0;
  visibleSince = document.hidden ? null : performance.now();
});

function takeSeconds() {
  const now = performance.now();
  const total = visibleMs + (visibleSince !== null ? now - visibleSince : 0);
  visibleMs = 0;
  if (visibleSince !== null) visibleSince = now;
  return Math.max(0, Math.min(86400, Math.round(total / 1000)));
}

/* Whether the page is being left (go, pagehide): a keepalive request still goes out then, but its promise may reject
 * as the page goes, so a rejection says nothing of whether the server stored the time. */
let leaving = false;

/* The time of this visit not sent yet, sent on its own: the request outlives the page (keepalive), so leaving it
 * loses nothing. Not sent, the time is kept for the next try: a 5xx, or a failed request while the page stays (one
 * rejected as the page is left is not kept, or the pagehide that follows would send the same seconds again). */
export function sendTimeSpent() {
  if (!page.can_edit || !page.api.time) return;
  const seconds = takeSeconds();
  if (seconds < 1) return;
  const keep = () => (visibleMs += seconds * 1000);
  let request;
  try {
    request = fetch(page.api.time, {
      method: "POST",
      headers: jsonHeaders(),
      credentials: "same-origin",
      keepalive: true,
      body: JSON.stringify({ round: page.round, seconds }),
    });
  } catch (error) {
    keep();
    return;
  }
  request.then(
    (response) => {
      if (response.status >= 500) keep();
    },
    () => {
      if (!leaving) keep();
    },
  );
}

/* ---------- done ---------- */

const doneButton = $('[data-role="done"]');
const notDoneButton = $('[data-role="mark-not-done"]');
const doneBadge = $('[data-role="done-badge"]');
const progress = $('[data-role="progress"]');
const progressText = $('[data-role="progress-text"]');

export function renderDone() {
  doneBadge.hidden = !state.done;
  if (doneButton) {
    doneButton.replaceChildren(document.createTextNode(state.done ? "Next " : "Done "), make("kbd", "", "D"));
    doneButton.classList.toggle("primary", !state.done);
    doneButton.title = state.done
      ? "Already done: go to the next unfinished sample (D)"
      : "Mark this sample done and go to the next unfinished one (D)";
    doneButton.hidden = !page.can_edit;
  }
  if (notDoneButton) notDoneButton.hidden = !(state.done && page.can_mark_not_done);
  progress.value = state.doneCount;
  progressText.textContent = `${state.doneCount}/${page.total} done`;
}

/* POST the review; true when the server took it. A frozen round freezes the page. */
async function sendReview(done) {
  const seconds = takeSeconds();
  status.pending++;
  setStatus();
  let result;
  try {
    // As span saves do, it waits out a server restart (about 45 s), then moves on as the press asked.
    result = await send("POST", page.api.review, { round: page.round, done, seconds }, { delays: PATIENT_RETRY_DELAYS_MS });
  } catch (error) {
    visibleMs += seconds * 1000;
    status.error = error.message;
    return false;
  } finally {
    status.pending--;
    setStatus();
  }
  if (!result.ok) {
    visibleMs += seconds * 1000;
    if (isFrozenAnswer(result)) {
      const reason = errorMessage(result.data, result.status);
      freeze(reason);
      notice(reason, "warn", true);
    } else if (result.status === 404) {
      // The sample is no longer this annotator's (an admin unassigned or removed them while the page was open).
      const reason = `Nothing was saved: you no longer annotate round ${page.round} of ${page.batch} (an admin ` +
        "unassigned or removed you). Your spans stay stored; ask an admin if this is a mistake.";
      freeze(reason);
      notice(reason, "warn", true);
    } else {
      status.error = errorMessage(result.data, result.status);
    }
    setStatus();
    return false;
  }
  status.error = null;
  setStatus();
  return true;
}

const BATCH_COMPLETE = "Batch complete — every sample is marked done. Thank you!";
// A re-opened round is submitted again only with its own button, never by D.
const REOPENED_COMPLETE = "Every sample is marked done. Press Submit again (above) when you have made all your changes.";
const allDoneMessage = () => (page.reopened ? REOPENED_COMPLETE : BATCH_COMPLETE);

/* D: mark the sample done (a done sample stays done) and go to the next unfinished one. */
export async function markDoneAndMoveOn() {
  if (state.busyDone) return;
  // A done sample only moves on, read-only or not; marking one done is a change, refused as the other keys' are.
  if (!state.done && refusedWhileReadOnly()) return;
  state.busyDone = true;
  try {
    // Its spans saved first (leaving.js): a span not saved keeps the annotator here, with a notice.
    if (!(await readyToLeave(state.done ? "moving on" : "marking the sample done"))) return;
    if (state.done) {
      // Already done: count the time spent, never un-mark, and move on.
      if (page.can_edit) await sendReview(true);
      if (page.next_unfinished_url) return go(page.next_unfinished_url);
      if (page.next_url) return go(page.next_url);
      notice(allDoneMessage(), "ok", true);
      return;
    }
    if (!(await sendReview(true))) return;
    state.done = true;
    state.doneCount = Math.min(page.total, state.doneCount + 1);
    renderDone();
    if (page.next_unfinished_url) {
      window.location.assign(page.next_unfinished_url);
      return;
    }
    if (page.reopened) {
      notice(REOPENED_COMPLETE, "ok", true); // still open: Submit again freezes it
      return;
    }
    // Every sample is done: the round is submitted, and the server now refuses changes to it.
    freeze(`You submitted round ${page.round} of ${page.batch}, so it is frozen; ask an admin to re-open it if it must change.`);
    notice(BATCH_COMPLETE, "ok", true);
  } finally {
    state.busyDone = false;
  }
}

/* Its own control (and Shift+D), so moving on with D can never un-mark a sample. */
export async function markNotDone() {
  if (state.busyDone) return;
  if (!state.done) {
    // The key that cannot act says why (the button shows only on a done sample).
    notice("This sample is not marked done: D marks it done.", "info");
    return;
  }
  if (!page.can_mark_not_done) return;
  state.busyDone = true;
  try {
    await settle();
    if (!(await sendReview(false))) return;
    state.done = false;
    state.doneCount = Math.max(0, state.doneCount - 1);
    renderDone();
    notice("Marked not done.", "info");
  } finally {
    state.busyDone = false;
  }
}

/* Submit again: the only way a re-opened round freezes once more. The server checks every sample is done. */
export async function submitAgain() {
  if (state.busyDone || !page.reopened) return;
  state.busyDone = true;
  try {
    await settle();
    if (unsavedSpans()) {
      notice("Some spans are not saved yet: retry them (in the span list) before you submit again.", "warn", true);
      return;
    }
    let result;
    try {
      result = await send("POST", page.reopened.submit_url, { round: page.round });
    } catch (error) {
      notice(`Not submitted: ${error.message}. Try again.`, "warn", true);
      return;
    }
    if (isFrozenAnswer(result)) {
      endReopening();
      const reason = errorMessage(result.data, result.status);
      freeze(reason);
      notice(reason, "warn", true);
      return;
    }
    if (!result.ok) {
      notice(`Not submitted: ${errorMessage(result.data, result.status)}`, "warn", true);
      return;
    }
    endReopening();
    freeze(`You submitted round ${page.round} of ${page.batch} again, so it is frozen; ask an admin to re-open it if it must change.`);
    notice(`Round ${page.round} of ${page.batch} submitted again. Thank you!`, "ok", true);
  } finally {
    state.busyDone = false;
  }
}

function endReopening() {
  page.reopened = null;
  const reopenedNotice = $('[data-role="reopened-notice"]');
  if (reopenedNotice) reopenedNotice.hidden = true;
}

/* [ ] p n and the arrows' links: as D, only once the sample's spans are saved (leaving.js). */
export async function go(url) {
  if (!url) return;
  if (!(await readyToLeave("moving on"))) return;
  leaving = true;
  sendTimeSpent(); // the pagehide sends what is left; here it goes before the next page is asked for
  window.location.assign(url);
}
