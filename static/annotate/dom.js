/* DOM pieces every page shares: elements built from text only (data never goes through innerHTML),
 * and whether the user is typing, when single-key shortcuts must stay quiet. */

export const make = (tag, className, text) => {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined && text !== null) el.textContent = text;
  return el;
};

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
