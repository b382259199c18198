/* Clicks and controls: the texts (selection, clicks), label buttons, span list, span editor and note, others' list. */

import { $, activeSpan, editable, others, root, sides, spanByKey, state } from "./state.js";
import { readSelection, selectionIsCollapsed, snapToWords } from "./selection.js";
import { requestSimilarity } from "./shading.js";
import { editor, editorParts, othersList, renderEditor, renderList, spanList } from "./spans.js";
import { applyLabel, discardSpan, flushNote, linkSelection, retrySpan, scheduleNote, setLink } from "./actions.js";
import { clearAll, setActive } from "./active.js";
import { deleteSpan, undoDelete } from "./undo.js";
import { copyOther, previewOther } from "./others.js";
import { updateSelectionHint } from "./hint.js";

const SELECTION_DEBOUNCE_MS = 120;

/* ---------- selection and semantic highlighting ---------- */

let selectionTimer = null;
function onSelectionMaybeChanged() {
  clearTimeout(selectionTimer);
  selectionTimer = setTimeout(() => {
    const selection = readSelection();
    updateSelectionHint(selection);
    if (selection) requestSimilarity(selection);
  }, SELECTION_DEBOUNCE_MS);
}

/* The selection's hint and shading follow it; a click on the summary or on a shaded source sentence chooses. */
export function wireSelection() {
  document.addEventListener("selectionchange", onSelectionMaybeChanged);
  // The hint for a caret in the source (L links its sentence) depends on the focus as well.
  sides.source.el.addEventListener("focus", onSelectionMaybeChanged);
  sides.source.el.addEventListener("blur", onSelectionMaybeChanged);
  document.addEventListener("mouseup", (event) => {
    snapToWords(event);
    onSelectionMaybeChanged();
  });

  sides.summary.el.addEventListener("click", (event) => {
    if (!selectionIsCollapsed()) return;
    const seg = event.target.closest(".seg");
    if (!seg || !seg.dataset.spans) return;
    const keys = seg.dataset.spans.split(" ");
    const at = keys.indexOf(state.activeKey);
    setActive(spanByKey(keys[(at + 1) % keys.length]));
  });

  // A plain click on a shaded source sentence links it to the active span. Wait out
  // the double-click window first: a double click selects a word instead.
  let sentenceClickTimer = null;
  sides.source.el.addEventListener("click", (event) => {
    clearTimeout(sentenceClickTimer);
    const span = activeSpan();
    if (event.detail > 1 || !span || !editable(span) || !selectionIsCollapsed()) return;
    const sentenceEl = event.target.closest("[data-sentence]");
    if (!sentenceEl || !sentenceEl.hasAttribute("data-similarity")) return;
    const sentence = sides.source.sentences[Number(sentenceEl.dataset.sentence)];
    if (!sentence) return;
    sentenceClickTimer = setTimeout(() => {
      if (activeSpan() === span && selectionIsCollapsed()) setLink(span, sentence[0], sentence[1]);
    }, 250);
  });
}

/* ---------- controls ---------- */

export function wireControls() {
  // Keep the text selection when a control is pressed with the mouse.
  for (const control of root.querySelectorAll(".labels button, .span-editor button")) {
    control.addEventListener("mousedown", (event) => event.preventDefault());
  }
  for (const button of root.querySelectorAll("[data-label]")) {
    // Shift+click adds the label to the selected span, or takes it away.
    button.addEventListener("click", (event) => applyLabel(button.dataset.label, { add: event.shiftKey }));
  }
  $('[data-role="undo"]').addEventListener("click", () => undoDelete());

  // Retry and Discard keep the focus where it is: the note's blur redraws the list, and a button redrawn
  // between the press and the release gets no click.
  spanList.addEventListener("mousedown", (event) => {
    if (event.target.closest("button[data-role]")) event.preventDefault();
  });
  spanList.addEventListener("click", (event) => {
    const item = event.target.closest("[data-span-key]");
    if (!item) return;
    const span = spanByKey(item.dataset.spanKey);
    if (!span) return;
    const role = event.target.closest("[data-role]");
    if (role && role.dataset.role === "retry") return retrySpan(span);
    if (role && role.dataset.role === "discard") return discardSpan(span);
    if (span.key !== state.activeKey) setActive(span);
  });
  // Each item takes Tab; Enter or Space on it chooses its span, as a click does (its own buttons keep their keys).
  spanList.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" && event.key !== " ") return;
    if (event.ctrlKey || event.metaKey || event.altKey || event.shiftKey) return;
    const item = event.target.closest("[data-span-key]");
    if (!item || event.target !== item) return;
    event.preventDefault();
    const span = spanByKey(item.dataset.spanKey);
    if (span && span.key !== state.activeKey) setActive(span);
  });

  editor.addEventListener("click", (event) => {
    const role = event.target.closest("button[data-role]");
    if (!role) return;
    const span = activeSpan();
    if (role.dataset.role === "deselect") return clearAll();
    if (!span) return;
    if (role.dataset.role === "link") linkSelection();
    else if (role.dataset.role === "unlink") setLink(span, null, null);
    else if (role.dataset.role === "delete") deleteSpan(span);
    else if (role.dataset.role === "use-discarded") useDiscardedNote(span);
    else if (role.dataset.role === "copy-discarded") copyDiscardedNote(span, role);
    else if (role.dataset.role === "dismiss-discarded") {
      span.discardedNote = null;
      renderEditor(false);
    }
  });

  if (editorParts.note.tagName === "TEXTAREA") {
    editorParts.note.addEventListener("input", () => {
      const span = activeSpan();
      if (!editable(span)) return;
      span.note = editorParts.note.value;
      scheduleNote(span);
    });
    editorParts.note.addEventListener("blur", () => {
      const span = activeSpan();
      if (span) flushNote(span);
      renderList();
    });
  }

  if (othersList) {
    othersList.addEventListener("click", (event) => {
      const item = event.target.closest("[data-other-index]");
      if (!item) return;
      const index = Number(item.dataset.otherIndex);
      const role = event.target.closest("[data-role]");
      if (role && role.dataset.role === "copy") return copyOther(others.spans[index]);
      previewOther(state.preview === index ? null : index);
    });
    // Enter or Space on an item shows its span in the texts, or hides it again, as a click does (nothing is saved);
    // its Copy button keeps its own keys.
    othersList.addEventListener("keydown", (event) => {
      if (event.key !== "Enter" && event.key !== " ") return;
      if (event.ctrlKey || event.metaKey || event.altKey || event.shiftKey) return;
      const item = event.target.closest("[data-other-index]");
      if (!item || event.target !== item) return;
      event.preventDefault();
      const index = Number(item.dataset.otherIndex);
      previewOther(state.preview === index ? null : index);
    });
  }
}

/* A note typed here that a newer version from another tab replaced (saving.js keeps it): put back and saved on the
 * newer version, or copied to be merged by hand. */
function useDiscardedNote(span) {
  if (!editable(span) || !span.discardedNote) return;
  span.note = span.discardedNote;
  span.discardedNote = null;
  renderEditor(true);
  scheduleNote(span);
  flushNote(span);
  editorParts.note.focus();
}

function copyDiscardedNote(span, button) {
  const text = span.discardedNote || "";
  const copied = () => {
    button.textContent = "Copied";
    setTimeout(() => (button.textContent = "Copy"), 2000);
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(copied, () => selectForCopy());
  } else {
    selectForCopy();
  }
  function selectForCopy() {
    // Where the clipboard is not allowed (plain http), the words are selected, for Ctrl+C.
    const range = document.createRange();
    range.selectNodeContents(editorParts.discardedText);
    window.getSelection().removeAllRanges();
    window.getSelection().addRange(range);
    if (document.execCommand("copy")) copied();
  }
}
