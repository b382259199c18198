/* The keyboard caret in the two texts. Chromium neither moves nor draws a caret in non-editable text, so a
 * keyboard annotator could only start a selection at the first word. Here the arrows move the selection's
 * focus themselves (Left/Right by character, Ctrl+Left/Right by word, Ctrl+Up/Down or Alt+Shift+Up/Down by
 * sentence), Shift extends
 * from the caret, and a thin bar is drawn where the caret is while the text has the focus. Characters and words
 * are those of boundaries.js: grapheme clusters, and the segmenter's words in scripts written without spaces.
 * Left/Right go the way the screen shows: in Arabic or Hebrew text → steps back through the text. */

import { make, root, sides } from "./state.js";
import { offsetIn, pointAt } from "./selection.js";
import { graphemeStop, isWordAt, textLocale, wordEnd, wordStart } from "./boundaries.js";

/* The next stop by word, in UTF-16 units: forward the end of the next word, backward the start of the previous
 * one, so the caret always sits between words (as Chromium's own word moves on Linux do, on every platform). */
export function wordStop(text, at, forward, locale) {
  if (forward) {
    while (at < text.length && !isWordAt(text, at)) at++;
    return at < text.length ? wordEnd(text, at + 1, locale) : at;
  }
  while (at > 0 && !isWordAt(text, at - 1)) at--;
  return at > 0 ? wordStart(text, at - 1, locale) : at;
}

/* The side's sentences as [start, end) in UTF-16 units. A text whose sentences are not split yet (the embedding
 * job splits them) is cut after ., ! or ? followed by white space, so the keys still work there. */
function sentenceBounds(sideName) {
  const { index, sentences } = sides[sideName];
  if (sentences.length) return sentences.map(([start, end]) => [index.toU16(start), index.toU16(end)]);
  const text = index.text;
  const bounds = [];
  const pattern = /\S[\s\S]*?(?:[.!?]+(?=\s)|$)/g;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    bounds.push([match.index, match.index + match[0].length]);
  }
  return bounds;
}

/* Forward the start of the next sentence (the text's end after the last), backward the start of this one or
 * the previous one. */
function sentenceStop(sideName, text, at, forward) {
  const starts = sentenceBounds(sideName).map(([start]) => start);
  if (forward) return starts.find((start) => start > at) ?? text.length;
  return starts.filter((start) => start < at).pop() ?? 0;
}

const sideOf = (node) => ["summary", "source"].find((name) => sides[name].el.contains(node)) || null;

/* The caret (the selection's focus) in the side's text, in UTF-16 units; null when the selection is elsewhere. */
function caretOffset(sideName) {
  const selection = window.getSelection();
  const { el } = sides[sideName];
  if (!selection || !selection.rangeCount || !el.contains(selection.focusNode)) return null;
  return offsetIn(el, selection.focusNode, selection.focusOffset);
}

function place(sideName, anchor, focus) {
  const { el } = sides[sideName];
  const from = pointAt(el, anchor);
  const to = pointAt(el, focus);
  window.getSelection().setBaseAndExtent(from.node, from.offset, to.node, to.offset);
}

/* Whether the text runs right to left where the caret is: the computed direction of the element holding the caret
 * (the texts carry dir="auto", so an Arabic or Hebrew text is rtl), the text's own with no caret in it. */
function rightToLeft(sideName) {
  const { el } = sides[sideName];
  const selection = window.getSelection();
  let node = selection && selection.rangeCount && el.contains(selection.focusNode) ? selection.focusNode : el;
  if (node.nodeType !== Node.ELEMENT_NODE) node = node.parentElement;
  return getComputedStyle(node).direction === "rtl";
}

/* Whether Left/Right goes on in the text's order: the arrows move as the screen shows in the paragraph's
 * direction, so in a right-to-left paragraph → goes back in the text and ← on. Chromium's own caret follows each
 * run's direction; this one follows the paragraph's, so inside English words of an Arabic paragraph it steps
 * the other way. */
function onward(sideName, key) {
  return (key === "ArrowRight") !== rightToLeft(sideName);
}

/* Shift+arrows that keep Chromium's own steps (Selection.modify extends by them in non-editable text). */
const EXTEND_KEYS = {
  ArrowLeft: ["backward", "character"],
  ArrowRight: ["forward", "character"],
  ArrowUp: ["backward", "line"],
  ArrowDown: ["forward", "line"],
  Home: ["backward", "lineboundary"],
  End: ["forward", "lineboundary"],
};

function extendByBrowser(event, sideName) {
  const selection = window.getSelection();
  if (typeof selection.modify !== "function") return false;
  if (caretOffset(sideName) === null) place(sideName, 0, 0);
  const { el } = sides[sideName];
  const anchor = el.contains(selection.anchorNode) ? offsetIn(el, selection.anchorNode, selection.anchorOffset) : null;
  let [direction, granularity] = EXTEND_KEYS[event.key];
  // Shift+Left/Right as the screen shows them (see onward); Up/Down, Home and End keep the text's order.
  if (granularity === "character") direction = onward(sideName, event.key) ? "forward" : "backward";
  selection.modify("extend", direction, granularity);
  // A line down from the text's last line (or a character past its end) takes the focus out of the text, into
  // what follows it in the pane; a line up from the first, into what precedes it. The selection never leaves the
  // text it started in: it stops at the text's end (or start), and the caret keys go on from there.
  if (anchor !== null && !el.contains(selection.focusNode)) {
    place(sideName, anchor, direction === "forward" ? el.textContent.length : 0);
  }
  return true;
}

/* Shift+Ctrl+Left/Right (or Shift+Alt): the selection's focus goes on by a word. From a bare caret the
 * selection starts at the word itself, not at the space before it, so what is shown is what a label saves. */
function extendByWord(sideName, forward) {
  const text = sides[sideName].el.textContent;
  const selection = window.getSelection();
  const caret = caretOffset(sideName) ?? 0;
  let anchor = caret;
  if (selection.isCollapsed || caretOffset(sideName) === null) {
    if (forward) while (anchor < text.length && !isWordAt(text, anchor)) anchor++;
    else while (anchor > 0 && !isWordAt(text, anchor - 1)) anchor--;
  } else {
    anchor = offsetIn(sides[sideName].el, selection.anchorNode, selection.anchorOffset);
  }
  place(sideName, anchor, wordStop(text, caret, forward, textLocale(sides[sideName].el)));
}

/* Whether the browser runs on a Mac (or an iPad, which reports one), where Option+Left/Right move by word as
 * Ctrl+Left/Right do elsewhere. userAgentData first: navigator.platform is frozen or empty in some browsers. */
export function isMacPlatform(nav) {
  const platform = (nav && nav.userAgentData && nav.userAgentData.platform) || (nav && nav.platform) || "";
  return /^mac|^ipad/i.test(platform);
}

/* Whether a Left/Right press without Shift moves the caret by word: Ctrl everywhere, and Option (Alt) alone on a
 * Mac. Elsewhere Alt+Left/Right stay the browser's Back and Forward; Alt+Up/Down are never caret keys here, so
 * they keep choosing the next or previous span on every platform. */
export function movesByWord(event, mac) {
  if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return false;
  if (event.ctrlKey) return !event.altKey;
  return Boolean(mac && event.altKey);
}

/* Whether an Up/Down press moves the caret by sentence: Ctrl+Up/Down, and Alt+Shift+Up/Down (Option+Shift on a
 * Mac) on every platform, since on a Mac Mission Control and App Exposé take Ctrl+Up/Down before the browser sees
 * them. Plain Alt+Up/Down choose a span and Shift+Up/Down (Ctrl or not) extend by a line, as before. */
export function movesBySentence(event) {
  if (event.key !== "ArrowUp" && event.key !== "ArrowDown") return false;
  if (event.metaKey) return false;
  if (event.ctrlKey) return !event.altKey && !event.shiftKey;
  return event.altKey && event.shiftKey;
}

const ON_MAC = isMacPlatform(navigator);
/* The sentence keys as the page's notices name them: on a Mac the pair that reaches the browser there. */
export const SENTENCE_KEYS = ON_MAC ? "Option+Shift+↓ / Option+Shift+↑" : "Ctrl+↓ / Ctrl+↑";

/* Left/Right, Ctrl+Left/Right and the sentence keys: the caret moves and any selection collapses. */
function moveCaret(sideName, key, ctrl) {
  const text = sides[sideName].el.textContent;
  const at = caretOffset(sideName) ?? 0;
  const forward = key === "ArrowDown" || (key !== "ArrowUp" && onward(sideName, key));
  const locale = textLocale(sides[sideName].el);
  let to;
  if (key === "ArrowUp" || key === "ArrowDown") to = sentenceStop(sideName, text, at, forward);
  else if (ctrl) to = wordStop(text, at, forward, locale);
  else to = graphemeStop(text, at, forward, locale);
  place(sideName, to, to);
}

/* The caret keys of a focused text. Returns true when the key was one of them (and its default is prevented).
 * Plain Up/Down are left alone: they scroll the page as before. Alt+Left/Right without Shift are the browser's
 * Back and Forward, so they are left alone too, except on a Mac, where Option+Left/Right are its word moves. */
export function caretKey(event) {
  if (event.metaKey) return false;
  const sideName = sideOf(event.target);
  if (!sideName) return false;
  const horizontal = event.key === "ArrowLeft" || event.key === "ArrowRight";
  const wordly = event.ctrlKey || event.altKey;
  if (movesBySentence(event)) {
    moveCaret(sideName, event.key, false);
  } else if (event.shiftKey) {
    if (horizontal && wordly) extendByWord(sideName, onward(sideName, event.key));
    else if (!(event.key in EXTEND_KEYS) || !extendByBrowser(event, sideName)) return false;
  } else if (movesByWord(event, ON_MAC)) {
    moveCaret(sideName, event.key, true);
  } else if (event.altKey) {
    return false;
  } else if (horizontal) {
    moveCaret(sideName, event.key, event.ctrlKey);
  } else {
    return false;
  }
  event.preventDefault();
  return true;
}

/* The sentence holding the caret of the focused source, as code points [start, end]; null when the source does
 * not have the focus, holds no bare caret, or has no sentence. A caret at a sentence's end still belongs to it,
 * one in the gap between two sentences to the next. */
export function caretSentence(sideName) {
  const { el, index } = sides[sideName];
  const selection = window.getSelection();
  if (document.activeElement !== el || !selection || !selection.isCollapsed) return null;
  const at = caretOffset(sideName);
  if (at === null) return null;
  const bounds = sentenceBounds(sideName);
  const found =
    bounds.find(([start, end]) => start <= at && at < end) ||
    bounds.find(([start, end]) => start <= at && at <= end) ||
    bounds.find(([start]) => start > at) ||
    bounds[bounds.length - 1];
  return found ? [index.toCp(found[0], false), index.toCp(found[1], true)] : null;
}

/* ---------- the drawn caret ---------- */

const bar = make("span", "word-caret");
bar.dataset.role = "caret";
bar.setAttribute("aria-hidden", "true");
bar.hidden = true;
document.body.appendChild(bar);

/* The part of an element on screen, top and bottom: its box cut by every ancestor that scrolls its content. */
function visibleBox(element) {
  let { top, bottom } = element.getBoundingClientRect();
  for (let node = element; node && node !== document.body; node = node.parentElement) {
    const overflow = getComputedStyle(node).overflowY;
    if (overflow === "auto" || overflow === "scroll" || overflow === "hidden") {
      const clip = node.getBoundingClientRect();
      top = Math.max(top, clip.top);
      bottom = Math.min(bottom, clip.bottom);
    }
  }
  return { top, bottom };
}

/* Show the bar at the caret of the focused text; hide it when no text has the focus or words are selected. */
export function drawCaret() {
  const selection = window.getSelection();
  const sideName = sideOf(document.activeElement);
  const shown =
    sideName && document.activeElement === sides[sideName].el && selection && selection.rangeCount && selection.isCollapsed &&
    sides[sideName].el.contains(selection.focusNode);
  if (!shown) {
    bar.hidden = true;
    return;
  }
  const range = document.createRange();
  range.setStart(selection.focusNode, selection.focusOffset);
  const rects = range.getClientRects();
  const rect = rects.length ? rects[rects.length - 1] : range.getBoundingClientRect();
  // The texts scroll inside their own boxes: a caret scrolled out of its box is not drawn over what lies beyond.
  const box = visibleBox(sides[sideName].el);
  if (!rect || !rect.height || rect.bottom <= box.top || rect.top >= box.bottom) {
    bar.hidden = true;
    return;
  }
  bar.style.left = `${rect.left + window.scrollX - 1}px`;
  bar.style.top = `${rect.top + window.scrollY}px`;
  bar.style.height = `${rect.height}px`;
  bar.hidden = false;
}

document.addEventListener("selectionchange", drawCaret);
for (const name of ["summary", "source"]) {
  sides[name].el.addEventListener("focus", drawCaret);
  sides[name].el.addEventListener("blur", drawCaret);
}
window.addEventListener("resize", drawCaret);
// Scrolling the page or a text's own box moves the caret's place on screen (capture: scroll does not bubble).
document.addEventListener("scroll", drawCaret, { capture: true, passive: true });
// A notice, the undo toast or the span editor appearing moves the texts: the bar follows.
if (typeof ResizeObserver === "function") new ResizeObserver(drawCaret).observe(root);
