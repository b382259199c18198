/* FaithLab annotation page: plain JavaScript ES modules, no framework, no build step.
 * This module wires the page's events and keyboard shortcuts to the other modules. */

import { $, activeSpan, editable, labelByHotkey, others, page, root, sides, spanByKey, state } from "./state.js";
import { notice, refusedWhileReadOnly, setStatus, notesWaiting, status, unsavedSpans } from "./feedback.js";
import { pointAt, readSelection, selectionIsCollapsed, snapToWords } from "./selection.js";
import { caretKey } from "./caret.js";
import { requestSimilarity, showSimilarityNote } from "./shading.js";
import {
  editor,
  editorParts,
  focusOtherItem,
  focusSpanItem,
  focusedOtherIndex,
  othersList,
  renderAll,
  renderList,
  renderEditor,
  renderOthersSummary,
  spanList,
} from "./spans.js";
import {
  applyLabel,
  clearAll,
  copyOther,
  deleteSpan,
  discardSpan,
  flushNote,
  hideUndo,
  linkSelection,
  previewOther,
  retryFailed,
  retrySpan,
  scheduleNote,
  SPAN_KEYS,
  setActive,
  setLink,
  stepActive,
  stepPreview,
  undoDelete,
} from "./actions.js";
import { updateSelectionHint } from "./hint.js";
import { go, markDoneAndMoveOn, markNotDone, renderDone, submitAgain } from "./review.js";
import { closeFlagForm, flagFormOpen, initFlag } from "./flag.js";
import { isTyping } from "../js/typing.js";
import { shortcutKey } from "../js/keys.js";
import { settleGuard } from "../js/settle.js";
import { modalDialog } from "./dialog.js";
import { showCueLegend } from "./cues.js";

const SELECTION_DEBOUNCE_MS = 120;
/* D (or the Done button) on a sample shown for less than this is ignored, and the page says so: a quick second press
 * meant for the sample just left would otherwise mark the next one done unread (and, on the last open sample, submit
 * the round). Longer than the pair page's 300 ms: moving on here loads a whole page, which eats part of the gap. */
const DONE_SETTLE_MS = 700;

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

/* ---------- controls ---------- */

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

/* ---------- done and navigation ---------- */

/* The sample has just appeared: D and Done wait (static/js/settle.js), saying so; the root's data-settled tells
 * tests when they count. */
const doneSettle = settleGuard({
  ms: DONE_SETTLE_MS,
  refused: () => notice("Not marked done: this sample has only just appeared. Read it, then press D again.", "info"),
  changed: (settled) => (root.dataset.settled = String(settled)),
});
// A page restored by Back or Forward (the browser's page cache) is a sample appearing too.
window.addEventListener("pageshow", (event) => {
  if (event.persisted) doneSettle.restart();
});

/* D and Done: ignored (saying so) while the sample has just appeared. */
function doneIfSettled() {
  if (doneSettle.refuses()) return;
  markDoneAndMoveOn();
}

const doneButton = $('[data-role="done"]');
if (doneButton) doneButton.addEventListener("click", doneIfSettled);
const retryAllButton = $('[data-role="retry-all"]');
if (retryAllButton) retryAllButton.addEventListener("click", () => retryFailed());
const notDoneButton = $('[data-role="mark-not-done"]');
if (notDoneButton) notDoneButton.addEventListener("click", markNotDone);
const submitAgainButton = $('[data-role="submit-again"]');
if (submitAgainButton) submitAgainButton.addEventListener("click", submitAgain);
root.addEventListener("annotate:frozen", () => {
  renderDone();
  hideUndo();
  updateSelectionHint(null);
});
for (const [role, url] of [
  ["prev", page.prev_url],
  ["next", page.next_url],
]) {
  const link = $(`[data-role="${role}"]`);
  if (!link) continue;
  link.addEventListener("click", (event) => {
    event.preventDefault();
    go(url);
  });
}

window.addEventListener("beforeunload", (event) => {
  if (page.frozen) return; // nothing more can be saved: no reason to hold the annotator here
  if (status.pending > 0 || notesWaiting() || unsavedSpans()) {
    event.preventDefault();
    event.returnValue = "";
  }
});

/* ---------- shortcuts ---------- */

const overlay = $('[data-role="shortcuts"]');
// A modal dialog: the focus moves to its Close button and stays inside until Esc or Close gives it back.
const shortcutsDialog = modalDialog(overlay, { initialFocus: $('[data-role="close-shortcuts"]') });
const toggleOverlay = (show) => shortcutsDialog.toggle(show);
$('[data-role="help"]').addEventListener("click", () => toggleOverlay());
$('[data-role="close-shortcuts"]').addEventListener("click", () => toggleOverlay(false));
overlay.addEventListener("click", (event) => {
  if (event.target === overlay) toggleOverlay(false);
});

/* Shift+label key adds or removes the label. Matched by physical key: Shift+1 types "!"
 * on one layout and "%" on another. Where Shift types the hotkey itself (the digits of
 * a French keyboard), Shift+key stays "set this label"; Shift+click adds there. */
const labelByCode = {};
for (const [hotkey, name] of Object.entries(labelByHotkey)) {
  if (/^[0-9]$/.test(hotkey)) {
    labelByCode["Digit" + hotkey] = name;
    labelByCode["Numpad" + hotkey] = name;
  } else if (/^[a-z]$/i.test(hotkey)) {
    labelByCode["Key" + hotkey.toUpperCase()] = name;
  }
}

document.addEventListener("keydown", (event) => {
  if (event.defaultPrevented || event.isComposing) return;
  if (isTyping(event.target)) {
    if (event.key === "Escape") {
      const inNote = event.target === editorParts.note;
      event.target.blur();
      // Out of a span's note, the focus goes to that span's item in the list (Enter goes back to it, Tab on),
      // not to the page's start.
      const span = activeSpan();
      if (inNote && span) focusSpanItem(span.key);
    }
    return;
  }
  if (flagFormOpen()) {
    if (event.key === "Escape") closeFlagForm();
    return;
  }
  if (caretKey(event)) return;
  if (event.altKey && !event.ctrlKey && !event.metaKey && !event.shiftKey && overlay.hidden) {
    if ((event.key === "ArrowDown" || event.key === "ArrowUp") && othersList && othersList.contains(document.activeElement)) {
      // In the other annotators' list (round 2) the same keys step through their spans, the focus going along.
      event.preventDefault();
      const shown = stepPreview(event.key === "ArrowDown" ? 1 : -1, focusedOtherIndex());
      if (shown !== null) focusOtherItem(shown);
      return;
    }
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      // The next or previous span; a focused list item goes along, so Tab and Enter carry on from there.
      event.preventDefault();
      const inList = spanList.contains(document.activeElement);
      const span = stepActive(event.key === "ArrowDown" ? 1 : -1);
      if (span && inList) focusSpanItem(span.key);
      return;
    }
  }
  if ((event.ctrlKey || event.metaKey) && !event.altKey && !event.shiftKey && shortcutKey(event) === "z") {
    // Outside text fields Ctrl+Z brings back the last deleted span; with none, it says so (as u does on the pair and
    // audit pages), and a read-only page says why it takes no change.
    event.preventDefault();
    if (refusedWhileReadOnly() || undoDelete() || event.repeat) return;
    notice("Nothing to undo: no span was deleted on this sample since it was opened.", "info");
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  // Caps Lock aside (static/js/keys.js); Shift+letter keeps its own meaning here (Shift+D, Shift+label key).
  const key = shortcutKey(event, { shiftedLetters: true });
  if (!overlay.hidden) {
    if (key === "Escape" || key === "?") {
      event.preventDefault();
      toggleOverlay(false);
    }
    return;
  }
  if (event.shiftKey && event.code in labelByCode && !(key in labelByHotkey)) {
    event.preventDefault();
    if (event.repeat) return;
    applyLabel(labelByCode[event.code], { add: true });
    return;
  }
  if (event.shiftKey && event.code === "KeyD") {
    event.preventDefault();
    if (!event.repeat && !refusedWhileReadOnly()) markNotDone();
    return;
  }
  if (key in labelByHotkey) {
    event.preventDefault();
    if (event.repeat) return;
    applyLabel(labelByHotkey[key]);
    return;
  }
  switch (key) {
    case "?":
      event.preventDefault();
      toggleOverlay(true);
      break;
    case "Escape":
      clearAll();
      break;
    case "Delete":
    case "Backspace": {
      event.preventDefault();
      if (refusedWhileReadOnly()) break;
      const span = activeSpan();
      if (span && editable(span)) {
        deleteSpan(span);
      } else if (!event.repeat) {
        // Like E and L: a key that cannot act says why, rather than seeming broken (once: a held key's repeats
        // after a delete find no span chosen).
        notice(
          `Choose a span first (click it in the list or the summary, or press ${SPAN_KEYS}), then press Delete to delete it.`,
          "info",
        );
      }
      break;
    }
    case "l":
    case "L":
      event.preventDefault();
      linkSelection();
      break;
    case "e":
    case "E": {
      // Straight into the active span's note; Esc leaves it again.
      if (refusedWhileReadOnly()) {
        event.preventDefault();
        break;
      }
      const span = activeSpan();
      const note = editor.querySelector('textarea[data-role="note"]');
      if (span && editable(span) && note && !editor.hidden) {
        event.preventDefault();
        note.focus();
        note.setSelectionRange(note.value.length, note.value.length);
      } else {
        // Like L: a key that cannot act says why, rather than seeming broken.
        notice(
          `Choose a span first (click it in the list or the summary, or press ${SPAN_KEYS}), then press E to write its note.`,
          "info",
        );
      }
      break;
    }
    case "d":
    case "D":
      if (event.repeat) break;
      event.preventDefault();
      doneIfSettled();
      break;
    case "[":
    case "p":
      event.preventDefault();
      if (page.prev_url) go(page.prev_url);
      else notice(`This is the first sample of ${page.batch}.`, "info");
      break;
    case "]":
    case "n":
      event.preventDefault();
      if (page.next_url) go(page.next_url);
      else notice(`This is the last sample of ${page.batch}.`, "info");
      break;
    default:
      break;
  }
});

/* ---------- start ---------- */

/* Keyboard first: the summary holds the focus as the sample appears, with the caret at its start, so the caret and
 * selection keys (Ctrl+→, Shift+→) work at once, with no click or Tabs on every sample. Nothing scrolls; a focus
 * taken while the page loaded (a click) is left where it is. */
function focusSummaryAtStart() {
  const active = document.activeElement;
  if (active && active !== document.body) return;
  const summary = sides.summary.el;
  summary.focus({ preventScroll: true });
  const selection = window.getSelection();
  if (selection && !(selection.rangeCount && summary.contains(selection.focusNode))) {
    const start = pointAt(summary, 0);
    selection.collapse(start.node, start.offset);
  }
}

if (!page.embeddings_ready) showSimilarityNote();
renderOthersSummary();
showCueLegend(root);
renderAll({ syncNote: true });
renderDone();
initFlag();
setStatus();
focusSummaryAtStart();
doneSettle.restart();
root.classList.add("ready");
