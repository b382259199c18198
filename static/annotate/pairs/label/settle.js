/* When an answer counts on the pair labeling page: an item on screen, nothing on its way, the item settled. */

import { SETTLE_MS, root, state } from "./state.js";

/* An answer counts only with an item on screen, nothing on its way, and the item settled. The page says which on
 * its root (data-answerable, "true" or "false"): the CSS dims the answers by it, and tests wait for it. */
export function showAnswerable() {
  root.dataset.answerable = String(Boolean(state.item) && !state.busy && state.settled);
}

export function setBusy(busy) {
  state.busy = busy;
  showAnswerable();
}

/* A new item starts unsettled; SETTLE_MS after it is put on the page (painted within a frame) its answers count. */
let settleTimer = null;
export function settleNewItem() {
  clearTimeout(settleTimer);
  state.settled = false;
  showAnswerable();
  settleTimer = setTimeout(() => {
    state.settled = true;
    showAnswerable();
  }, SETTLE_MS);
}
