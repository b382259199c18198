/* Leaving a sample (D, [ and ], p and n, the arrows beside the position) only once what was done on it is saved.
 *
 * The saves on their way are waited for; then a span whose save failed (the session ended, the server refused it, its
 * tries spent) keeps the annotator on the sample, with a notice, whichever key was pressed: ] used to leave anyway,
 * and the browser's "Leave site?" dialog then lost the span. Saves still being tried (the connection dropped, "Failed
 * — retrying") are waited for with a notice saying so, and the annotator going on working meanwhile (a key, a click,
 * typing a note) cancels the move: the page used to jump to the next sample when the connection came back, under a
 * note being typed. */

import { flushNote } from "./actions.js";
import { notice, notesWaiting, status, unsavedSpans } from "./feedback.js";
import { page, root, sleep, state } from "./state.js";

/* Wait for every queued write, so leaving the page loses nothing. */
export async function settle() {
  for (const span of state.spans) flushNote(span);
  // Loop: a finishing write may have queued another (e.g. a note after a create).
  for (let round = 0; round < 5 && status.pending > 0; round++) {
    await Promise.all(state.spans.map((span) => span.queue));
    if (status.pending > 0) await sleep(50);
  }
}

// How long a wait goes unsaid: saves answered at once (the usual case) show no notice.
const QUIET_MS = 600;
let waiting = null; // the move the page waits to make: {what}, until it is made or cancelled

/* Whether the sample may be left now for `what` ("moving on", "marking it done"): waits for the saves on their way,
 * then says no (with a notice) when a span is not saved or the annotator went on working meanwhile. */
export async function readyToLeave(what) {
  const move = { what };
  waiting = move;
  for (const span of state.spans) flushNote(span);
  let told = null;
  if (status.pending > 0 || notesWaiting()) {
    const tell = () => {
      if (waiting !== move) return;
      notice(
        `Saving before ${what}${status.retrying > 0 ? " (the connection dropped: the saves are tried again)" : ""}. ` +
          "The page moves on once every change is saved; keep working here to stay.",
        "info",
        true,
      );
    };
    told = setTimeout(tell, status.retrying > 0 ? 0 : QUIET_MS);
    await settle();
  }
  clearTimeout(told);
  const cancelled = waiting !== move;
  if (waiting === move) waiting = null;
  if (cancelled) return false;
  if (page.frozen) return true; // nothing more can be saved: nothing to wait for
  if (unsavedSpans()) {
    notice(`Some spans are not saved yet: retry them (in the span list) before ${what}.`, "warn");
    return false;
  }
  return true;
}

/* The annotator works on (a key, a click, typing) while the page waits to leave: it stays. */
function workOn(event) {
  if (!waiting) return;
  if (event.type === "keydown" && ["Shift", "Control", "Alt", "Meta", "CapsLock"].includes(event.key)) return;
  const { what } = waiting;
  waiting = null;
  notice(`Not ${what}: you went on working on this sample. The changes are saved as usual.`, "info");
}
for (const type of ["keydown", "pointerdown", "input"]) root.ownerDocument.addEventListener(type, workOn, true);
