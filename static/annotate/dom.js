/* DOM pieces every page shares: elements built from text only (data never goes through innerHTML),
 * and whether the user is typing, when single-key shortcuts must stay quiet. */

export const make = (tag, className, text) => {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined && text !== null) el.textContent = text;
  return el;
};

export function isTyping(target) {
  if (!target || target.nodeType !== 1) return false;
  if (target.isContentEditable) return true;
  return Boolean(target.closest("input, textarea, select, [contenteditable]:not([contenteditable='false'])"));
}
