/* The span list, the selected span's editor, the label buttons and (round 2) the others' spans. */

import {
  $,
  activeSpan,
  agreesWithMine,
  categoryOf,
  editable,
  leafLabels,
  make,
  others,
  page,
  root,
  sides,
  spanColor,
  state,
  visibleSpans,
} from "./state.js";
import { renderText } from "./texts.js";
import { scrollToShow } from "./dom.js";

export const spanList = $('[data-role="span-list"]');
const labelChip = (label) => {
  const chip = make("span", "chip cat-" + categoryOf([label]));
  const dot = make("span", "chip-dot"); // the label's own colour, as its underline in the text
  dot.style.background = spanColor([label]);
  dot.setAttribute("aria-hidden", "true");
  chip.append(dot, label);
  return chip;
};
const swatch = (labels) => {
  const mark = make("span", "span-swatch");
  mark.style.background = spanColor(labels);
  return mark;
};
const noSpans = $('[data-role="no-spans"]');
const spanCount = $('[data-role="span-count"]');

/* Give the focus to a span's list item (each takes Tab, and Enter or Space chooses it). */
export function focusSpanItem(key) {
  const item = [...spanList.querySelectorAll("[data-span-key]")].find((el) => el.dataset.spanKey === key);
  if (item) item.focus({ preventScroll: true });
  return Boolean(item);
}

export function renderList() {
  // The items are built anew: a keyboard user's focus on one must not fall back to the page's start.
  const focused = spanList.contains(document.activeElement) ? document.activeElement.closest("[data-span-key]") : null;
  const spans = visibleSpans();
  const items = spans.map((span) => {
    const item = make("li", "span-item cat-" + categoryOf(span.labels));
    if (span.id) item.dataset.spanId = String(span.id);
    item.dataset.spanKey = span.key;
    if (span.key === state.activeKey) {
      item.classList.add("active");
      item.setAttribute("aria-current", "true");
    }
    if (!span.mine) item.classList.add("others");
    item.tabIndex = 0;
    item.appendChild(swatch(span.labels));
    const body = make("div", "span-body");
    const line = make("div", "span-line");
    line.appendChild(quoted(span.text));
    const labels = make("span", "span-labels");
    for (const label of leafLabels(span.labels)) labels.appendChild(labelChip(label));
    if (!span.labels.length) {
      // Imported data can hold a span with an empty label list; worst pooling ignores it.
      const none = make("span", "chip chip-none", "no label");
      none.title = "An empty label list: this span does not count in the sample's label";
      labels.appendChild(none);
    }
    line.appendChild(labels);
    if (!span.mine) line.appendChild(make("span", "span-annotator", span.annotator));
    body.appendChild(line);
    if (span.source_text) body.appendChild(make("div", "span-source", "↔ " + span.source_text));
    if (span.note) body.appendChild(make("div", "span-note", span.note));
    if (!span.id && span.state === "saving") body.appendChild(make("div", "span-state", "saving…"));
    if (span.state === "failed") {
      const failed = make("div", "span-state failed", "Not saved" + (span.error ? ": " + span.error : "") + " ");
      const actions = [];
      // A frozen round refuses every write: retrying would only fail again.
      if (!page.frozen) actions.push(["retry", "Retry"]);
      if (!span.id) actions.push(["discard", "Discard"]);
      actions.forEach(([role, text], i) => {
        const button = make("button", "link", text);
        button.type = "button";
        button.dataset.role = role;
        if (i) failed.appendChild(document.createTextNode(" · "));
        failed.appendChild(button);
      });
      body.appendChild(failed);
    }
    item.appendChild(body);
    return item;
  });
  spanList.replaceChildren(...items);
  if (focused) focusSpanItem(focused.dataset.spanKey);
  noSpans.hidden = spans.length > 0;
  spanCount.textContent = spans.length ? `(${spans.length})` : "";
}

/* A span's words in a line of the page's own words: isolated (bdi), so right-to-left words keep their quote marks
 * on both sides and do not pull the words after them into their direction. */
function quoted(text) {
  const quote = make("q", "span-text");
  quote.appendChild(make("bdi", null, text));
  return quote;
}

export const editor = $('[data-role="span-editor"]');
export const editorParts = buildEditor();

function buildEditor() {
  let discarded = null;
  let discardedText = null;
  const head = make("div", "editor-head");
  head.appendChild(make("span", "editor-title", "Selected span"));
  const text = make("q", "editor-text");
  head.appendChild(text);
  const labels = make("div", "editor-labels");
  const who = make("div", "editor-annotator muted");
  editor.append(head, labels, who);
  let note;
  if (page.can_edit) {
    // The note's name and key beside its box, not on a line of their own: in round 2 every line the editor takes is
    // one the other annotators' spans lose on a laptop screen.
    const noteLabel = make("label", "editor-note");
    const noteTitle = make("span", "editor-note-title muted", "Note ");
    noteTitle.append(make("kbd", "", "E"), make("span", "visually-hidden", " (saved as you type)"));
    noteLabel.appendChild(noteTitle);
    note = make("textarea");
    note.rows = 2;
    note.title = "Saved as you type (E: write the note; Esc: leave it)";
    note.dataset.role = "note";
    note.placeholder = "Why is this a hallucination? What does the source say?";
    note.dir = "auto"; // a note in Arabic or Hebrew is typed and shown right to left
    noteLabel.appendChild(note);
    editor.appendChild(noteLabel);
    discarded = make("div", "discarded-note");
    discarded.dataset.role = "discarded-note";
    discarded.setAttribute("role", "status");
    discarded.hidden = true;
    discarded.appendChild(make("span", "muted", "Your note, not saved (the span changed in another tab): "));
    discardedText = make("q", "discarded-text");
    discardedText.dataset.role = "discarded-text";
    discarded.appendChild(discardedText);
    const discardedActions = make("span", "discarded-actions");
    for (const [role, label, title] of [
      ["use-discarded", "Use my note", "Put your note back in the note field, in place of the newer one, and save it"],
      ["copy-discarded", "Copy", "Copy your note, to add it to the newer one by hand"],
      ["dismiss-discarded", "Dismiss", "Forget your note"],
    ]) {
      const button = make("button", "link", label);
      button.type = "button";
      button.dataset.role = role;
      button.title = title;
      discardedActions.appendChild(button);
    }
    discarded.appendChild(discardedActions);
    editor.appendChild(discarded);
  } else {
    note = make("div", "editor-note-readonly");
    note.dir = "auto";
    note.dataset.role = "note";
    editor.appendChild(note);
  }
  const source = make("div", "editor-source");
  editor.appendChild(source);
  const actions = make("div", "editor-actions");
  const button = (role, label, hotkey, className) => {
    const el = make("button", className || "", label);
    el.type = "button";
    el.dataset.role = role;
    if (hotkey) {
      el.appendChild(document.createTextNode(" "));
      el.appendChild(make("kbd", "", hotkey));
    }
    actions.appendChild(el);
    return el;
  };
  // Short words, so the buttons share a row with the source line (their titles say the rest).
  const link = button("link", "Link", "L");
  link.title = "Link the source selection to this span; with none, the source sentence at the caret, or the closest " +
    "outlined one (L)";
  const unlink = button("unlink", "Unlink");
  unlink.title = "Take the link to the source away";
  const remove = button("delete", "Delete", "Del", "danger");
  button("deselect", "Close", "Esc");
  editor.appendChild(actions);
  return { text, labels, who, note, discarded, discardedText, source, link, unlink, remove };
}

export function renderEditor(syncNote) {
  const span = activeSpan();
  editor.hidden = !span;
  if (!span) return;
  const canChange = editable(span);
  editorParts.text.replaceChildren(make("bdi", null, span.text));
  editorParts.labels.replaceChildren(...leafLabels(span.labels).map(labelChip));
  editorParts.who.textContent = span.mine ? "" : "by " + span.annotator;
  editorParts.who.hidden = span.mine;
  if (editorParts.note.tagName === "TEXTAREA") {
    editorParts.note.disabled = !canChange;
    if (syncNote) editorParts.note.value = span.note;
    editorParts.discarded.hidden = !(canChange && span.discardedNote);
    editorParts.discardedText.replaceChildren(make("bdi", null, span.discardedNote || ""));
  } else {
    editorParts.note.textContent = span.note || "No note.";
  }
  // One line beside the buttons (cut short where it is longer; the whole of it in its title): the list item shows
  // the linked text in full, and the shortcut list says every way of linking.
  editorParts.source.replaceChildren();
  if (span.source_text) {
    editorParts.source.appendChild(make("span", "muted", "Linked source: "));
    editorParts.source.appendChild(make("q", "", span.source_text));
    editorParts.source.title = `Linked source: “${span.source_text}”`;
  } else {
    editorParts.source.appendChild(
      make("span", "muted", canChange ? "No source linked (L)" : "No source linked."),
    );
    editorParts.source.title = canChange
      ? "No source linked: press L for the closest outlined sentence (again for the next), select source text and " +
        "press L, or click a shaded source sentence."
      : "";
  }
  editorParts.link.hidden = !canChange;
  editorParts.unlink.hidden = !canChange || span.source_start === null;
  editorParts.remove.hidden = !canChange;
}

/* The label buttons show which labels the selected span holds. */
export function renderLabelButtons() {
  const span = activeSpan();
  for (const button of root.querySelectorAll("[data-label]")) {
    const pressed = Boolean(span && span.labels.includes(button.dataset.label));
    button.setAttribute("aria-pressed", pressed ? "true" : "false");
    button.disabled = !page.can_edit;
  }
}

/* ---------- round 2 (reconciliation): the others' round-1 spans, read-only ---------- */

export const othersList = $('[data-role="others-list"]');

/* Give the focus to another annotator's list item (each takes Tab; Enter or Space shows its span in the texts). */
export function focusOtherItem(index) {
  const item = othersList && othersList.querySelector(`[data-other-index="${index}"]`);
  if (item) item.focus();
  return Boolean(item);
}

/* The index of the other annotator's item that holds the focus (or whose Copy button does); null elsewhere. */
export function focusedOtherIndex() {
  const item = othersList && othersList.contains(document.activeElement) && document.activeElement.closest("[data-other-index]");
  return item ? Number(item.dataset.otherIndex) : null;
}

/* Alt+↓ / Alt+↑ chose a span: bring it into view in the summary's own box (its first words where it is taller than
 * the box), and its linked source text in the source's. */
export function revealActive() {
  const span = activeSpan();
  if (!span) return;
  scrollToShow(sides.summary.el, [...sides.summary.el.querySelectorAll(".seg.active")].reverse());
  if (span.source_start !== null) scrollToShow(sides.source.el, [...sides.source.el.querySelectorAll(".seg.linked")].reverse());
}

/* Bring the shown span of another annotator into view: in the summary's and the source's own boxes, in the list's
 * own box (a long list scrolls inside itself on wide screens), and in the summary column together with its list
 * item where both fit. */
export function revealPreview() {
  if (state.preview === null || !othersList) return;
  const inSummary = sides.summary.el.querySelector(".seg.preview");
  scrollToShow(sides.summary.el, [inSummary]);
  scrollToShow(sides.source.el, [sides.source.el.querySelector(".seg.preview")]);
  const item = othersList.querySelector(`[data-other-index="${state.preview}"]`);
  if (othersList.scrollHeight > othersList.clientHeight) scrollToShow(othersList, [item]);
  scrollToShow(root.querySelector(".column-summary"), [inSummary, item]);
}

export function renderOthersSummary() {
  const line = $('[data-role="others-summary"]');
  if (!others || !line) return;
  const worst = Object.entries(others.worst_labels || {});
  line.replaceChildren(make("span", "muted", "Round-1 sample labels: "));
  worst.forEach(([name, category], i) => {
    if (i) line.appendChild(document.createTextNode(" · "));
    // Under pseudonyms nothing else tells the annotator which letter is theirs.
    const who = others.you && name === others.you ? `${name} (you)` : name;
    line.appendChild(make("span", "", `${who}: ${category}`));
  });
  if (others.disagree) {
    // Apart from the last label in words too: a screen reader ran them together ("Questionabledisagreement").
    const badge = make("span", "badge disagree", "disagreement");
    line.append(document.createTextNode(" "), make("span", "visually-hidden", "— "), badge);
  }
}

function renderOthers() {
  if (!others || !othersList) return;
  // Built anew like the own list: a keyboard user's focus on an item, or on its Copy button, stays there.
  const focusedIndex = focusedOtherIndex();
  const focusedCopy = focusedIndex !== null && document.activeElement.dataset.role === "copy";
  const items = others.spans.map((other, i) => {
    const item = make("li", "span-item other-item cat-" + categoryOf(other.labels || []));
    item.dataset.role = "other-span";
    item.dataset.otherIndex = String(i);
    item.tabIndex = 0; // read-only: the item only shows its span in the texts
    if (state.preview === i) {
      item.classList.add("active");
      item.setAttribute("aria-current", "true");
    }
    item.appendChild(swatch(other.labels || []));
    const body = make("div", "span-body");
    const line = make("div", "span-line");
    line.appendChild(quoted(other.text));
    const labels = make("span", "span-labels");
    for (const label of leafLabels(other.labels || [])) labels.appendChild(labelChip(label));
    line.appendChild(labels);
    line.appendChild(make("span", "span-annotator", other.annotator));
    body.appendChild(line);
    if (other.source_text) body.appendChild(make("div", "span-source", "↔ " + other.source_text));
    if (other.note) body.appendChild(make("div", "span-note", other.note));
    const footer = make("div", "other-footer");
    const agrees = agreesWithMine(other);
    const verdict = make("span", agrees ? "agreement agrees" : "agreement differs",
      agrees ? "✓ one of your spans agrees" : "none of your spans agrees");
    verdict.dataset.agrees = agrees ? "true" : "false";
    footer.appendChild(verdict);
    if (page.can_edit) {
      const copy = make("button", "link", "Copy to mine");
      copy.type = "button";
      copy.dataset.role = "copy";
      footer.appendChild(copy);
    }
    body.appendChild(footer);
    item.appendChild(body);
    return item;
  });
  othersList.replaceChildren(...items);
  keepRoomForOthers();
  if (focusedIndex !== null) {
    const item = othersList.querySelector(`[data-other-index="${focusedIndex}"]`);
    const target = focusedCopy ? item && item.querySelector('[data-role="copy"]') : item;
    if (target) target.focus({ preventScroll: true });
  }
  $('[data-role="no-others"]').hidden = items.length > 0;
}

/* Round 2 is for comparing with the others: their list keeps room for its first OTHERS_KEPT items (all of them when
 * fewer), however little room the column has left, never more than OTHERS_MOST_VH of the window. On a 1280x720 laptop
 * the selected span's editor used to squeeze it to a 42 px box that showed less than one of their spans; where the
 * column is too short for that room it scrolls as a whole. */
const OTHERS_KEPT = 2;
const OTHERS_MOST_VH = 0.4;

function keepRoomForOthers() {
  if (!othersList) return;
  const items = othersList.children;
  if (!items.length || !othersList.getClientRects().length) {
    othersList.style.minHeight = "";
    return;
  }
  const last = items[Math.min(items.length, OTHERS_KEPT) - 1];
  const listTop = othersList.getBoundingClientRect().top - othersList.scrollTop;
  const style = getComputedStyle(othersList);
  const room = last.getBoundingClientRect().bottom - listTop + parseFloat(style.paddingBottom || "0") +
    parseFloat(style.borderBottomWidth || "0");
  othersList.style.minHeight = `${Math.ceil(Math.min(room, OTHERS_MOST_VH * window.innerHeight))}px`;
}
window.addEventListener("resize", keepRoomForOthers);

export function renderAll(options) {
  renderText("summary");
  renderText("source");
  renderList();
  renderEditor(options && options.syncNote);
  renderLabelButtons();
  renderOthers();
}
