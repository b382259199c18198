/* The keyboard shortcuts: the shortcuts overlay (?) and every key of the page outside text fields. */

import { $, activeSpan, editable, labelByHotkey, page } from "./state.js";
import { notice, refusedWhileReadOnly } from "./feedback.js";
import { caretKey } from "./caret.js";
import { editor, editorParts, focusOtherItem, focusSpanItem, focusedOtherIndex, othersList, spanList } from "./spans.js";
import { applyLabel, linkSelection } from "./actions.js";
import { clearAll, SPAN_KEYS, stepActive } from "./active.js";
import { deleteSpan, undoDelete } from "./undo.js";
import { stepPreview } from "./others.js";
import { go, markNotDone } from "./review.js";
import { closeFlagForm, flagFormOpen } from "./flag.js";
import { doneIfSettled } from "./done.js";
import { isTyping } from "../js/typing.js";
import { shortcutKey } from "../js/keys.js";
import { modalDialog } from "./dialog.js";

const overlay = $('[data-role="shortcuts"]');
let shortcutsDialog = null; // made by wireKeys
const toggleOverlay = (show) => shortcutsDialog.toggle(show);

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

/* The page's keys (in a text field only Esc counts): asked in this order, the first that matches acts. */
function onKeydown(event) {
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
}

export function wireKeys() {
  // A modal dialog: the focus moves to its Close button and stays inside until Esc or Close gives it back.
  shortcutsDialog = modalDialog(overlay, { initialFocus: $('[data-role="close-shortcuts"]') });
  $('[data-role="help"]').addEventListener("click", () => toggleOverlay());
  $('[data-role="close-shortcuts"]').addEventListener("click", () => toggleOverlay(false));
  overlay.addEventListener("click", (event) => {
    if (event.target === overlay) toggleOverlay(false);
  });
  document.addEventListener("keydown", onKeydown);
}
