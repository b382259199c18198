/* The swapped view: where the page scrolls and which element gets the focus once htmx has replaced #audit-view. */

import { $, root, shownItem, state } from "./state.js";

/* A control, named by what it is rather than by the element (the swap replaces every element of the view). */
export function controlName(el) {
  if (!el || !root.contains(el) || el === document.body) return null;
  if (el.dataset.score) return `[data-score="${CSS.escape(el.dataset.score)}"]`;
  if (el.dataset.role) return `[data-role="${CSS.escape(el.dataset.role)}"]`;
  return null;
}

/* The item's section, or the empty queue's: where Tab goes on from once an item is shown. */
export function focusItem() {
  const anchor = $('#audit-view [data-role="item"]') || $('[data-role="audit-empty"]');
  if (anchor) anchor.focus({ preventScroll: true });
}

/* After a swap. Another output (a verdict saved, or a refusal that serves the next one): the page goes back to its
 * top, or the new output would open scrolled as far down as the last one was (on a phone a thousand pixels, the
 * source's top hidden), and the focus goes to its section, never back to a control that Enter or Space would
 * press on an output not yet read. The same output (blind mode switched, the judges revealed): the page stays
 * where it is and the control that had the focus gets it back; if none did, the section takes it, not the body. */
export function settleView(before, focused) {
  if (shownItem() !== before) {
    state.scrollBeforeHelp = null;
    window.scrollTo({ top: 0, behavior: "instant" });
    focusItem();
    return;
  }
  const control = focused ? $(`#audit-view ${focused}`) : null;
  if (control && !control.disabled) control.focus({ preventScroll: true });
  else if (!root.contains(document.activeElement) || document.activeElement === root) focusItem();
}
