/* Showing an item of the pair labeling page (its texts with their marks), the end, and a refusal. */

import { make } from "../../dom.js";
import { errorMessage } from "../../http.js";
import { TextIndex } from "../../textindex.js";
import { hideUndoNotice, setLeft, setProgress } from "./feedback.js";
import { settleNewItem, showAnswerable } from "./settle.js";
import { els, root, state } from "./state.js";

/* The text with its marks as elements: the target wins over any other span it overlaps.
 * textContent stays exactly the text. */
function renderMarked(el, text, target, others) {
  const index = new TextIndex(text);
  const marks = [];
  const overlaps = (a, b) => a.start < b.end && b.start < a.end;
  for (const mark of [target, ...others]) {
    if (!mark) continue;
    const clean = { start: index.clamp(mark.start), end: index.clamp(mark.end), kind: mark.kind };
    if (clean.start >= clean.end || marks.some((kept) => overlaps(kept, clean))) continue;
    marks.push(clean);
  }
  marks.sort((a, b) => a.start - b.start);
  const fragment = document.createDocumentFragment();
  let at = 0;
  for (const mark of marks) {
    if (mark.start > at) fragment.appendChild(document.createTextNode(index.slice(at, mark.start)));
    const span = make(mark.kind === "target" ? "mark" : "span", mark.kind === "target" ? "target-span" : "other-span");
    span.dataset.role = mark.kind === "target" ? "target-span" : "other-span";
    span.textContent = index.slice(mark.start, mark.end);
    fragment.appendChild(span);
    at = mark.end;
  }
  if (at < index.length) fragment.appendChild(document.createTextNode(index.slice(at, index.length)));
  el.replaceChildren(fragment);
}

const spanOf = (pair, kind) => (Array.isArray(pair) && pair.length === 2 ? { start: pair[0], end: pair[1], kind } : null);

/* After an answer (or an undo) the next item is shown where the last one was: the focus goes to its section unless
 * it is on a text box, which stays (the box holds the new text). Never on the clicked answer button, where Enter or
 * Space, held or not, would "click" it again: the same answer on the new item, unread. Never on the page's body,
 * where Tab would start again from the top of the page. */
export function keepFocusInItem() {
  const focused = document.activeElement;
  const lost = !focused || focused === document.body || !root.contains(focused) || focused.disabled
    || Boolean(focused.closest("[hidden]"));
  if (!lost && !focused.matches("[data-label]")) return;
  const anchor = state.item ? els.item : els.end;
  anchor.focus({ preventScroll: true });
}

export function renderItem(item) {
  hideUndoNotice(item.id);
  state.item = item;
  settleNewItem();
  root.dataset.itemId = String(item.id);
  root.dataset.state = "item";
  els.loading.hidden = true;
  els.end.hidden = true;
  if (typeof item.original === "string") {
    els.original.classList.remove("missing");
    renderMarked(els.original, item.original, spanOf(item.original_span, "target"), []);
  } else {
    // HaDes release rows carry no original text: the span is judged in its own context.
    els.original.classList.add("missing");
    els.original.replaceChildren(make("span", "muted", "This item has no original text (an imported HaDes row): judge the span in its context."));
  }
  const others = (item.other_spans || []).map((pair) => spanOf(pair, "other"));
  renderMarked(els.perturbed, item.perturbed, spanOf(item.perturbed_span, "target"), others);
  els.change.replaceChildren(
    // bdi: right-to-left words keep the arrow between them, old on its left and new on its right.
    make("bdi", "old-words", item.original_words || "—"),
    document.createTextNode(" → "),
    make("bdi", "new-words", item.perturbed_words || ""),
  );
  els.change.title = els.change.textContent; // the line is cut short when the words are long
  for (const button of root.querySelectorAll("[data-label]")) button.setAttribute("aria-pressed", "false");
  els.item.classList.remove("answering");
  els.item.hidden = false;
  els.item.removeAttribute("aria-busy");
  // Hidden while refused (a block): an item served after an unblock brings them back.
  els.status.hidden = false;
  els.undo.hidden = false;
  setProgress(item.progress);
  for (const side of [els.original, els.perturbed]) showTarget(side);
}

/* Scroll the text's own box, never the page (scrollIntoView would move the whole page, the answers with it), so
 * the item's span is in view: a text is read from its start when the span is in its first screen, else the span
 * sits a third of the way down, with the words before it above. */
function showTarget(pane) {
  pane.scrollTop = 0;
  const target = pane.querySelector('[data-role="target-span"]');
  if (!target) return;
  const span = target.getBoundingClientRect();
  const top = span.top - pane.getBoundingClientRect().top - pane.clientTop;
  if (top + span.height <= pane.clientHeight) return;
  pane.scrollTop = top - Math.max(0, pane.clientHeight - span.height) / 3;
}

/* Nothing served (a 204): the page's own words for it (nothing left for you, or nothing to label yet), 0 left. */
export function renderEnd() {
  showEnd("done");
  els.endMessage.replaceChildren(els.endDefault.content.cloneNode(true));
  setLeft(0);
}

/* A refusal (403): a blocked judge, or a role that does not judge. No progress: none of a blocked judge's answers
 * counts and no item is left for them, so "N answered, M left" would contradict the reason beside it. No "Saved" and
 * no Undo either: nothing of theirs is saved any more, and undo is refused them (an answer refused on its way says so
 * in the status again: showFailure). */
export function renderRefused(data, statusCode) {
  const blocked = Boolean(data && data.code === "blocked");
  showEnd(blocked ? "blocked" : "refused");
  const title = make("h2", "", blocked ? "You are blocked in this project" : "You cannot label in this project");
  title.dataset.role = "end-title";
  const reason = make("p", "", errorMessage(data, statusCode));
  reason.dataset.role = "end-reason";
  els.endMessage.replaceChildren(title, reason);
  els.progress.hidden = true;
  els.status.hidden = true;
  els.undo.hidden = true;
}

function showEnd(pageState) {
  hideUndoNotice(null);
  state.item = null;
  showAnswerable();
  delete root.dataset.itemId;
  root.dataset.state = pageState;
  els.loading.hidden = true;
  els.item.hidden = true;
  els.item.removeAttribute("aria-busy");
  els.end.hidden = false;
}
