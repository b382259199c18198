/* The browser's selection as code-point offsets in one of the two texts, and word snapping for mouse drags.
 * The keyboard's caret and Shift+arrow selection are in caret.js. */

import { sides } from "./state.js";
import { textLocale, wordEnd, wordStart } from "./boundaries.js";

/* UTF-16 offset of (node, offset) counted from the start of container's text. */
export function offsetIn(container, node, offset) {
  const range = document.createRange();
  range.setStart(container, 0);
  range.setEnd(node, offset);
  return range.toString().length;
}

/* The text node and offset at a UTF-16 offset into container's text. */
export function pointAt(container, u16) {
  const walker = document.createTreeWalker(container, NodeFilter.SHOW_TEXT);
  let seen = 0;
  let last = null;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (u16 <= seen + node.data.length) return { node, offset: u16 - seen };
    seen += node.data.length;
    last = node;
  }
  return last ? { node: last, offset: last.data.length } : { node: container, offset: 0 };
}

/* Re-rendering a text replaces its nodes: these keep the selection across it. */
export function captureSelection(container) {
  const selection = window.getSelection();
  if (!selection || selection.rangeCount === 0) return null;
  if (!container.contains(selection.anchorNode) || !container.contains(selection.focusNode)) return null;
  return {
    anchor: offsetIn(container, selection.anchorNode, selection.anchorOffset),
    focus: offsetIn(container, selection.focusNode, selection.focusOffset),
  };
}

export function restoreSelection(container, saved) {
  if (!saved) return;
  const anchor = pointAt(container, saved.anchor);
  const focus = pointAt(container, saved.focus);
  window.getSelection().setBaseAndExtent(anchor.node, anchor.offset, focus.node, focus.offset);
}

export const selectionIsCollapsed = () => {
  const selection = window.getSelection();
  return !selection || selection.rangeCount === 0 || selection.isCollapsed;
};

/* The current selection as code-point offsets in one text, trimmed of white space. */
export function readSelection() {
  const selection = window.getSelection();
  if (!selection || selection.rangeCount === 0 || selection.isCollapsed) return null;
  const range = selection.getRangeAt(0);
  const order = ["summary", "source"];
  if (sides.source.el.contains(selection.anchorNode)) order.reverse();
  for (const name of order) {
    const { el, index } = sides[name];
    if (!range.intersectsNode(el)) continue;
    const whole = document.createRange();
    whole.selectNodeContents(el);
    const text = index.text;
    let start =
      range.compareBoundaryPoints(Range.START_TO_START, whole) <= 0
        ? 0
        : offsetIn(el, range.startContainer, range.startOffset);
    let end =
      range.compareBoundaryPoints(Range.END_TO_END, whole) >= 0
        ? text.length
        : offsetIn(el, range.endContainer, range.endOffset);
    while (start < end && /\s/.test(text[start])) start++;
    while (end > start && /\s/.test(text[end - 1])) end--;
    if (end <= start) continue;
    const cpStart = index.toCp(start, false);
    const cpEnd = index.toCp(end, true);
    if (cpEnd <= cpStart) continue;
    return { side: name, start: cpStart, end: cpEnd, text: index.slice(cpStart, cpEnd) };
  }
  return null;
}

/* A mouse drag that starts or ends inside a word takes the whole word, so a
 * hurried drag never saves "owfield's Calder Street Br". The browser's
 * selection is moved too: what is shown is what a label saves. Alt while
 * releasing keeps the exact characters; keyboard selection is always exact.
 * Words in scripts written without spaces are the segmenter's (boundaries.js). */
export function snapToWords(event) {
  if (!event.isTrusted || event.altKey || event.button !== 0) return;
  const selection = window.getSelection();
  if (!selection || selection.rangeCount === 0 || selection.isCollapsed) return;
  const container = [sides.summary.el, sides.source.el].find(
    (el) => el.contains(selection.anchorNode) && el.contains(selection.focusNode),
  );
  if (!container) return;
  const text = container.textContent;
  const anchor = offsetIn(container, selection.anchorNode, selection.anchorOffset);
  const focus = offsetIn(container, selection.focusNode, selection.focusOffset);
  const forward = anchor <= focus;
  let start = Math.min(anchor, focus);
  let end = Math.max(anchor, focus);
  const locale = textLocale(container);
  // Only widen a boundary that cuts a word; one already between words stays put.
  start = wordStart(text, start, locale);
  end = wordEnd(text, end, locale);
  if (start === Math.min(anchor, focus) && end === Math.max(anchor, focus)) return;
  const from = pointAt(container, forward ? start : end);
  const to = pointAt(container, forward ? end : start);
  selection.setBaseAndExtent(from.node, from.offset, to.node, to.offset);
}
