/* The audit page, keyboard first: 1-5 score, a agrees with the shown judge, w marks the reasoning wrong,
 * n goes to the note, Enter saves and shows the next output, b switches blind mode, ? lists the keys.
 * The keys work wherever the focus is but in a text field (the note); Enter on a button, checkbox, link or
 * summary in focus does that control's own action and never saves (nothing on this page takes a verdict back);
 * Ctrl/Cmd+Enter saves from anywhere. The next output opens at the page's top with the focus on its section.
 *
 * The server renders everything (texts with their quoted passages marked at code points, the judges'
 * answers, or in blind mode none of them until a score is given); htmx posts the forms and swaps
 * #audit-view with the answer. This module only keeps the form's hidden inputs in step with the keys,
 * shows the save status, ticks the item clock and links each reasoning quote with its marks. */

import { isTyping } from "../annotate/dom.js";
import { showSaveStatus } from "../annotate/savestatus.js";

const root = document.getElementById("auditor");
const $ = (selector) => root.querySelector(selector);
const HINT_MS = 6000;

const state = {
  busy: false, // a form is on its way: keys wait, so no verdict lands on an output not yet shown
  failure: null,
  revealing: null, // blind mode: the item whose score was sent to reveal its judges, until their answer settles
  saveAfterReveal: null, // the item whose verdict Enter asked to save while its reveal was on its way
  swappedFrom: undefined, // the item on screen when the view was swapped, and the control that had the focus
  focusedControl: null,
  scrollBeforeHelp: null, // where the page was when ? brought the shortcut list into view: Esc goes back there
};

/* ---------- feedback ---------- */

function setStatus(saving) {
  const el = $('[data-role="save-status"]');
  if (el) showSaveStatus(el, { saving, failure: state.failure });
}

let hintTimer = null;
function hint(message, kind = "warn") {
  const el = $('[data-role="hint"]');
  if (!el) return;
  clearTimeout(hintTimer);
  el.textContent = message;
  el.className = `notice ${kind}`;
  el.hidden = false;
  hintTimer = setTimeout(() => (el.hidden = true), HINT_MS);
}

/* ---------- the verdict form ---------- */

const form = () => $('[data-role="audit-form"]');
const stage = () => (form() ? form().dataset.stage : null);
const shownItem = () => {
  const view = $("#audit-view");
  return view ? view.dataset.itemId || null : null;
};

function showChoice() {
  const f = form();
  if (!f) return;
  const score = f.querySelector('[data-role="score-input"]').value;
  const agreed = f.querySelector('[data-role="agreed-input"]').value === "1";
  for (const button of f.querySelectorAll("[data-score]")) {
    button.setAttribute("aria-pressed", String(!agreed && button.dataset.score === score));
  }
  const agree = f.querySelector('[data-role="agree"]');
  if (agree) agree.setAttribute("aria-pressed", String(agreed));
}

function chooseScore(score) {
  const f = form();
  if (!f || state.busy) return;
  f.querySelector('[data-role="score-input"]').value = String(score);
  f.querySelector('[data-role="agreed-input"]').value = "";
  showChoice();
  // Blind mode: the score is the auditor's own, given before the judges' answers; sending it reveals them.
  if (stage() === "blind") f.requestSubmit();
}

function agree() {
  const f = form();
  if (!f || state.busy) return;
  if (stage() === "blind") {
    hint("Give your own score first (1-5): the judges' answers are hidden until then.");
    return;
  }
  const score = f.dataset.agreeScore;
  if (!score) {
    hint(f.dataset.agreeRefusal || "There is no judge's score to agree with: give your own (1-5).");
    return;
  }
  const agreed = f.querySelector('[data-role="agreed-input"]');
  const undo = agreed.value === "1";
  agreed.value = undo ? "" : "1";
  f.querySelector('[data-role="score-input"]').value = undo ? "" : score;
  showChoice();
}

function toggleReasoningWrong() {
  const box = form() && form().querySelector('[data-role="reasoning-wrong"]');
  if (!box) return;
  if (box.disabled) {
    hint("Give your own score first (1-5): then the reasoning is shown and can be marked wrong.");
    return;
  }
  box.checked = !box.checked;
}

function submit() {
  const f = form();
  if (!f) return;
  if (state.revealing !== null) {
    // "4 then Enter": the score went to reveal the judges and their answer is not in yet. The verdict is saved
    // once it is (the form then holds the score), once however often Enter is pressed meanwhile.
    if (state.saveAfterReveal === null) hint("Saving once the judges' answers are in…", "info");
    state.saveAfterReveal = state.revealing;
    return;
  }
  if (state.busy) return;
  if (stage() === "blind") {
    hint("Give your own score first (1-5): the judges' answers appear after it.");
    return;
  }
  if (!f.querySelector('[data-role="score-input"]').value) {
    hint("Give a score (1-5) or agree with the judge (a) first.");
    return;
  }
  f.requestSubmit();
}

function toggleBlind() {
  const blindForm = $('[data-role="blind-form"]');
  if (blindForm && !state.busy) blindForm.requestSubmit();
}

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

/* ---------- quotes: a reasoning quote and its marks in the texts light up together ---------- */

function lightQuote(id, on) {
  if (!id) return;
  for (const el of root.querySelectorAll("[data-quote]")) {
    if (el.dataset.quote.split(" ").includes(id)) el.classList.toggle("active", on);
  }
}

for (const [type, on] of [["mouseover", true], ["mouseout", false], ["focusin", true], ["focusout", false]]) {
  root.addEventListener(type, (event) => {
    const quote = event.target.closest && event.target.closest('[data-role="reasoning-quote"]');
    if (quote) lightQuote(quote.dataset.quote, on);
  });
}

/* ---------- the item clock (the server's count at render, then ticking here) ---------- */

let clockStarted = 0;
let clockBase = 0;
function startClock() {
  const el = $('[data-role="item-time"]');
  clockStarted = performance.now();
  clockBase = el ? Number(el.dataset.elapsed) || 0 : 0;
}
setInterval(() => {
  const el = $('[data-role="item-clock"]');
  if (!el) return;
  const seconds = Math.floor(clockBase + (performance.now() - clockStarted) / 1000);
  el.textContent = seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}, 1000);

/* ---------- the swapped view: where the page and the focus are ---------- */

/* A control, named by what it is rather than by the element (the swap replaces every element of the view). */
function controlName(el) {
  if (!el || !root.contains(el) || el === document.body) return null;
  if (el.dataset.score) return `[data-score="${CSS.escape(el.dataset.score)}"]`;
  if (el.dataset.role) return `[data-role="${CSS.escape(el.dataset.role)}"]`;
  return null;
}

/* The item's section, or the empty queue's: where Tab goes on from once an item is shown. */
function focusItem() {
  const anchor = $('#audit-view [data-role="item"]') || $('[data-role="audit-empty"]');
  if (anchor) anchor.focus({ preventScroll: true });
}

/* After a swap. Another output (a verdict saved, or a refusal that serves the next one): the page goes back to its
 * top, or the new output would open scrolled as far down as the last one was (on a phone a thousand pixels, the
 * source's top hidden), and the focus goes to its section, never back to a control that Enter or Space would
 * press on an output not yet read. The same output (blind mode switched, the judges revealed): the page stays
 * where it is and the control that had the focus gets it back; if none did, the section takes it, not the body. */
function settleView(before, focused) {
  if (shownItem() !== before) {
    state.scrollBeforeHelp = null;
    window.scrollTo({ top: 0, behavior: "instant" });
    focusItem();
    return;
  }
  const control = focused ? $(`#audit-view ${focused}`) : null;
  if (control && !control.disabled) control.focus({ preventScroll: true });
  else if (!root.contains(document.activeElement) || document.activeElement === root) focusItem();
}

/* ---------- htmx: save status, errors shown in place, the new item ---------- */

const ours = (event) => root.contains(event.target) || event.target === document.body;

document.addEventListener("htmx:beforeRequest", (event) => {
  if (!ours(event)) return;
  state.busy = true;
  state.failure = null;
  const elt = event.detail.elt;
  if (elt && elt.matches('[data-role="audit-form"][data-stage="blind"]')) state.revealing = shownItem();
  setStatus(event.detail.requestConfig && event.detail.requestConfig.verb !== "get");
});
document.addEventListener("htmx:beforeSwap", (event) => {
  if (ours(event)) {
    state.swappedFrom = shownItem();
    state.focusedControl = controlName(document.activeElement);
  }
  // A refused verdict (400 bad input, 409 answered already or not yours) comes with the page saying why.
  const code = event.detail.xhr.status;
  if (code === 400 || code === 409) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
    state.failure = "not saved (see the message)";
  }
});
document.addEventListener("htmx:afterRequest", (event) => {
  state.busy = false;
  if (!event.detail.successful && !state.failure) {
    const code = event.detail.xhr ? event.detail.xhr.status : 0;
    state.failure = code ? `the server answered ${code}` : "network error: press Enter to try again";
  }
  // A refused or failed reveal: the Enter that waited for it saves nothing, and says so.
  if (state.failure) {
    if (state.saveAfterReveal !== null) hint("Nothing saved: the judges' answers did not come (see the status).");
    forgetReveal();
  }
  setStatus(false);
});
document.addEventListener("htmx:sendError", () => {
  state.busy = false;
  state.failure = "network error: press Enter to try again";
  forgetReveal(); // afterRequest came first and said so
  setStatus(false);
});
document.addEventListener("htmx:afterSwap", (event) => {
  if (!ours(event)) return;
  showChoice();
  startClock();
  settleView(state.swappedFrom, state.focusedControl);
  state.swappedFrom = undefined;
  state.focusedControl = null;
});
// htmx wires a swapped-in form when it settles: the waiting verdict is sent then, through htmx like any other.
document.addEventListener("htmx:afterSettle", (event) => {
  if (!ours(event) || state.revealing === null) return;
  const item = state.saveAfterReveal;
  forgetReveal();
  // Only on the item whose judges were revealed, now shown with them: never on another output.
  if (item !== null && stage() === "open" && shownItem() === item) submit();
});

function forgetReveal() {
  state.revealing = null;
  state.saveAfterReveal = null;
}

/* ---------- controls and keys ---------- */

root.addEventListener("click", (event) => {
  const target = event.target.closest("button");
  if (!target || !root.contains(target)) return;
  if (target.dataset.score) chooseScore(target.dataset.score);
  else if (target.dataset.role === "agree") agree();
  else if (target.dataset.role === "toggle-help") toggleHelp();
});

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

document.addEventListener("keydown", (event) => {
  if (event.defaultPrevented || event.isComposing) return;
  const key = event.key;
  // Ctrl/Cmd+Enter saves from anywhere, the note included.
  if (key === "Enter" && (event.ctrlKey || event.metaKey)) {
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
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (/^[1-5]$/.test(key)) {
    event.preventDefault();
    // A held key must not score the outputs that follow unseen.
    if (!event.repeat) chooseScore(key);
    return;
  }
  switch (key) {
    case "a":
    case "A":
      event.preventDefault();
      if (!event.repeat) agree();
      break;
    case "w":
    case "W":
      event.preventDefault();
      if (!event.repeat) toggleReasoningWrong();
      break;
    case "n":
    case "N": {
      const note = form() && form().querySelector('[data-role="note"]');
      if (note) {
        event.preventDefault(); // the key moves to the note; it does not type an "n" there
        note.focus();
      }
      break;
    }
    case "Enter":
      event.preventDefault();
      if (!event.repeat) submit();
      break;
    case "b":
    case "B":
      event.preventDefault();
      if (!event.repeat) toggleBlind();
      break;
    case "?":
      event.preventDefault();
      toggleHelp();
      break;
    case "Escape":
      toggleHelp(false);
      break;
    default:
  }
});

/* ---------- start ---------- */

showChoice();
startClock();
setStatus(false);
root.classList.add("ready");
