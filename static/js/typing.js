/* Whether the user is typing, when single-key shortcuts must stay quiet: one answer for every page with
 * shortcuts (the span, pair labeling and audit pages), so a key that types on one page types on all. */

/* Inputs that take no typed text: a letter pressed while one has the focus is a shortcut as anywhere else (a
 * checkbox just ticked must not silence the page's keys). Only text fields keep the keys for themselves. */
const NOT_TYPED = new Set([
  "checkbox", "radio", "button", "submit", "reset", "image", "file", "range", "color", "hidden",
]);

export function isTyping(target) {
  if (!target || target.nodeType !== 1) return false;
  if (target.isContentEditable) return true;
  if (target.matches("textarea, select")) return true;
  if (target.matches("input")) return !NOT_TYPED.has(target.type);
  return Boolean(target.closest("[contenteditable]:not([contenteditable='false'])"));
}
