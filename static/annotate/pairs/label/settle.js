/* When an answer counts on the pair labeling page: an item on screen, nothing on its way, the item settled. */

import { settleGuard } from "../../../js/settle.js";
import { showStillSaving, showTooFast } from "./feedback.js";
import { SETTLE_MS, root, state } from "./state.js";

/* A new item starts unsettled; SETTLE_MS after it is put on the page (painted within a frame) its answers count.
 * A press before then is dropped and the "too fast" cue says so (static/js/settle.js). */
const itemSettle = settleGuard({ ms: SETTLE_MS, refused: showTooFast, changed: () => showAnswerable() });

/* An answer counts only with an item on screen, nothing on its way, and the item settled. The page says which on
 * its root (data-answerable, "true" or "false"): the CSS dims the answers by it, and tests wait for it. */
export function showAnswerable() {
  root.dataset.answerable = String(Boolean(state.item) && !state.busy && itemSettle.settled);
}

export function setBusy(busy) {
  state.busy = busy;
  showAnswerable();
}

export function settleNewItem() {
  itemSettle.restart();
}

/* The check every answer makes: true when it must be dropped (an answer still on its way, or the item not settled
 * yet), the cue saying which; false when it counts. */
export function answerRefused() {
  if (state.busy) {
    showStillSaving();
    return true;
  }
  return itemSettle.refuses();
}
