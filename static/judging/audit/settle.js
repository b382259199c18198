/* A new output is read before it is judged. For SETTLE_MS after another output is swapped in (a verdict saved, a
 * refusal that serves the next one, u or Esc), the presses that choose or save a verdict (1-5, a, w, Enter,
 * Ctrl/Cmd+Enter, the score buttons, Save) do nothing and say so; the score buttons and Save dim meanwhile
 * (audit.css). Typing ahead, "4 Enter 4 Enter 4 Enter" 120 ms apart, used to save three verdicts, two of them on
 * outputs shown a quarter of a second before: the busy guard only covers the first save's round trip (~50 ms).
 * 600 ms is far less than anyone takes to read a source and an output, so an auditor who reads never meets it. The
 * same output swapped in again (its judges revealed, blind mode switched, a verdict refused) and the page's first
 * view are not held: the choice a reload kept is saved at once. */

import { settleGuard } from "../../js/settle.js";
import { hint } from "./messages.js";
import { root } from "./state.js";

export const SETTLE_MS = 600;

/* The window is the shared guard's (static/js/settle.js); the root's data-settling, there while it lasts, dims the
 * controls (audit.css) and tells tests when the keys count. */
const outputSettle = settleGuard({
  ms: SETTLE_MS,
  refused: () => hint("Not taken: this output has just appeared. Read it, then press again.", "info"),
  changed: (settled) => {
    if (settled) delete root.dataset.settling;
    else root.dataset.settling = "true";
  },
});

/* Another output is on screen: its verdict keys wait SETTLE_MS. */
export function settleNewItem() {
  outputSettle.restart();
}

/* A press that would choose or save a verdict on an output just shown does nothing; said, so that a dropped key is
 * no mystery. True when the output has just appeared (the caller stops). */
export function refusedWhileSettling() {
  return outputSettle.refuses();
}
