/* The audit page's keys and control clicks: 1-5, a, w, n, Enter, Ctrl/Cmd+Enter, u (or Ctrl/Cmd+Z), b, j, k, ? and
 * Esc, inactive while typing in the note; Enter on a button, checkbox, link or summary in focus does that control's
 * own action. */

import { shortcutKey } from "../../js/keys.js";
import { isTyping } from "../../js/typing.js";
import { goBack, leaveChange } from "./back.js";
import { toggleBlind } from "./blind.js";
import { hint, refusedWhileBusy } from "./messages.js";
import { stepJudge } from "./quotes.js";
import { refusedWhileSettling } from "./settle.js";
import { form, root, state, viewState } from "./state.js";
import { agree, chooseScore, submit, toggleReasoningWrong } from "./verdict.js";
import { focusItem } from "./view.js";

function toggleHelp(show) {
  const help = document.getElementById("audit-help");
  const open = show === undefined ? !help.open : show;
  if (open === help.open) return;
  help.open = open;
  if (open) {
    // The list sits under the verdict form, below the fold on a laptop screen: bring it into view, or ? seems to do
    // nothing; and remember where the page was, so hiding the list brings the auditor back to the item.
    state.scrollBeforeHelp = window.scrollY;
    help.scrollIntoView({ block: "nearest" });
  } else if (state.scrollBeforeHelp !== null) {
    window.scrollTo({ top: state.scrollBeforeHelp, behavior: "instant" });
    state.scrollBeforeHelp = null;
  }
}

/* The score buttons, Agree, Change and Keys do what their keys do; Save waits as Enter does for an output just shown. */
export function wireControls() {
  root.addEventListener("click", (event) => {
    const leave = event.target.closest('a[data-role="leave-change"]');
    if (leave && root.contains(leave)) {
      // A link without the page's scripts; here the current item comes back in place, as after a save.
      event.preventDefault();
      leaveChange();
      return;
    }
    const target = event.target.closest("button");
    if (!target || !root.contains(target)) return;
    // Save clicked twice: the second click would land on the next output, shown a moment before (settle.js).
    if (target.dataset.role === "submit" && refusedWhileSettling()) event.preventDefault();
    else if (target.dataset.score) chooseScore(target.dataset.score);
    else if (target.dataset.role === "agree") agree();
    else if (target.dataset.role === "toggle-help") toggleHelp();
    else if (target.dataset.role === "change-saved") goBack();
  });
}

/* Controls whose own action Enter is: a button is pressed, a link followed, a summary opened, the checkbox ticked. */
const OWN_ENTER = [
  "button", "a[href]", "summary", "input[type='checkbox']", "input[type='radio']", "[role='button']", "[role='link']",
].join(", ");

function controlOwnsEnter(event) {
  const target = event.target;
  if (!target || target.nodeType !== 1 || !target.matches(OWN_ENTER)) return false;
  if (target.matches("input[type='checkbox']")) {
    // The browser gives Enter no meaning on a checkbox (or submits its form: a verdict saved): Enter ticks it,
    // as Space does, once per press.
    event.preventDefault();
    if (!event.repeat) target.click();
  }
  return true;
}

/* The "Nothing to audit" view has no output and no form: the verdict keys (1-5, a, w, n, Enter) find nothing to act
 * on, and say so, with what to do, in the hint area, once per press. True when the view is the empty one (the caller
 * stops). */
const EMPTY_WORDS =
  "Nothing to audit here: no flagged output is waiting for you in this project. " +
  "Check again for outputs flagged since, or go back to the project.";

function refusedWhileEmpty(event) {
  if (viewState() !== "empty") return false;
  event.preventDefault();
  if (!event.repeat) hint(EMPTY_WORDS, "info");
  return true;
}

function onKeydown(event) {
  if (event.defaultPrevented || event.isComposing) return;
  // Caps Lock or Shift changes no letter here (A is a): none has a Shift meaning of its own (static/js/keys.js).
  const key = shortcutKey(event);
  // Ctrl/Cmd+Enter saves from anywhere, the note included.
  if (key === "Enter" && (event.ctrlKey || event.metaKey)) {
    if (refusedWhileEmpty(event)) return;
    event.preventDefault();
    if (!event.repeat) submit();
    return;
  }
  if (isTyping(event.target)) {
    // Leaving the note: the focus goes to the item, so Tab goes on from there and the keys work again.
    if (key === "Escape") {
      event.target.blur();
      focusItem();
    }
    return;
  }
  if (key === "Enter" && controlOwnsEnter(event)) return;
  // Ctrl/Cmd+Z, the undo everyone tries first, does what u does (in the note it undoes typing, above).
  if ((event.ctrlKey || event.metaKey) && !event.altKey && !event.shiftKey && key === "z") {
    event.preventDefault();
    if (!event.repeat) goBack();
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if ((/^[1-5]$/.test(key) || /^[awn]$/.test(key) || key === "Enter") && refusedWhileEmpty(event)) return;
  if (/^[1-5]$/.test(key)) {
    event.preventDefault();
    // A held key must not score the outputs that follow unseen.
    if (!event.repeat) chooseScore(key);
    return;
  }
  switch (key) {
    case "a":
      event.preventDefault();
      if (!event.repeat) agree();
      break;
    case "w":
      event.preventDefault();
      if (!event.repeat) toggleReasoningWrong();
      break;
    case "j":
      event.preventDefault();
      stepJudge(1);
      break;
    case "k":
      event.preventDefault();
      stepJudge(-1);
      break;
    case "n": {
      const note = form() && form().querySelector('[data-role="note"]');
      if (note) {
        event.preventDefault(); // the key moves to the note; it does not type an "n" there
        // What is typed in the note of an output being saved would go with it, lost: wait for the next one.
        if (!refusedWhileBusy()) note.focus();
      }
      break;
    }
    case "u":
      event.preventDefault();
      if (!event.repeat) goBack();
      break;
    case "Enter":
      event.preventDefault();
      if (!event.repeat) submit();
      break;
    case "b":
      event.preventDefault();
      if (!event.repeat) toggleBlind();
      break;
    case "?":
      event.preventDefault();
      toggleHelp();
      break;
    case "Escape":
      if (document.getElementById("audit-help").open) toggleHelp(false);
      else if (viewState() === "change" && !event.repeat) leaveChange();
      break;
    default:
  }
}

export function wireKeys() {
  document.addEventListener("keydown", onKeydown);
}

/* Keys pressed while the page was still loading, before wireKeys (early.js noted them), did nothing: said once the
 * page is ready, so that no press is lost without a word. */
export function reportEarlyKeys() {
  const early = window.faithlabAuditEarlyKeys;
  const keys = early ? early.report() : [];
  if (!keys.length) return;
  const which = keys.length === 1 ? "it" : "them";
  hint(`Not taken: the page was still loading when you pressed ${keys.join(", ")}. Press ${which} again.`, "info");
}
