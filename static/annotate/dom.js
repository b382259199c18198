/* DOM pieces the span and pair labeling pages share: elements built from text only (data never goes through
 * innerHTML). Whether the user is typing lives in static/js/typing.js, as the audit page needs it too. */

export const make = (tag, className, text) => {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined && text !== null) el.textContent = text;
  return el;
};

/* Scroll one box, never the page, the least that shows all the targets; where they cannot all fit, the last
 * one (the list item the annotator is on) stays in view. On a phone the column does not scroll: nothing moves. */
export function scrollToShow(box, targets) {
  const rects = targets.filter(Boolean).map((target) => target.getBoundingClientRect());
  if (!box || !rects.length) return;
  let top = Math.min(...rects.map((rect) => rect.top));
  let bottom = Math.max(...rects.map((rect) => rect.bottom));
  if (bottom - top > box.clientHeight) ({ top, bottom } = rects[rects.length - 1]);
  const view = box.getBoundingClientRect();
  const margin = 6; // px: an outline drawn just outside the words stays whole
  if (top < view.top + margin) box.scrollTop -= view.top + margin - top;
  else if (bottom > view.bottom - margin) box.scrollTop += bottom - (view.bottom - margin);
}
