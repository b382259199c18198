/* The audit page, keyboard first: 1-5 score, a agrees with the shown judge, w marks the reasoning wrong,
 * n goes to the note, Enter saves and shows the next output, b switches blind mode, j and k choose whose quoted
 * passages the texts highlight, ? lists the keys.
 * The keys work wherever the focus is but in a text field (the note); Enter on a button, checkbox, link or
 * summary in focus does that control's own action and never saves (nothing on this page takes a verdict back);
 * Ctrl/Cmd+Enter saves from anywhere. The next output opens at the page's top with the focus on its section.
 *
 * The server renders everything (texts with their quoted passages marked at code points, the judges'
 * answers, or in blind mode none of them until a score is given); htmx posts the forms and swaps
 * #audit-view with the answer. This module only keeps the form's hidden inputs in step with the keys,
 * shows the save status and the messages, ticks the item clock, links each reasoning quote with its marks,
 * moves the highlight from judge to judge and says when a text goes on below its box. */

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
  quotesOf: null, // {item, judge}: the judge whose quotes the texts highlight, kept while the same item is shown
};

/* ---------- feedback ---------- */

function setStatus(saving) {
  const el = $('[data-role="save-status"]');
  if (el) showSaveStatus(el, { saving, failure: state.failure });
}

/* The messages' box lies over the toolbar's words: from its left edge to the first control of the controls' row, or,
 * when the controls have a row of their own (a narrow window), over the rows above it. Sized whenever a message
 * shows, so it follows the toolbar's wrapping. */
function placeMessages() {
  const box = $('[data-role="messages"]');
  const bar = box && box.parentElement;
  if (!bar) return;
  const barBox = bar.getBoundingClientRect();
  const children = [...bar.children].filter((el) => el !== box);
  const controls = children
    .filter((el) => el.matches('[data-role="save-status"], form, button'))
    .map((el) => el.getBoundingClientRect())
    .filter((rect) => rect.width > 0);
  // The first row ends where the toolbar's first words (the progress) end.
  const firstRowEnd = children.length ? children[0].getBoundingClientRect().bottom : barBox.bottom;
  const topRow = controls.filter((rect) => rect.top < firstRowEnd);
  const below = controls.filter((rect) => rect.top >= firstRowEnd);
  const gap = 6;
  const width = topRow.length ? Math.min(...topRow.map((rect) => rect.left)) - barBox.left - gap : barBox.width - 2;
  const height = below.length ? Math.min(...below.map((rect) => rect.top)) - barBox.top - gap / 2 : barBox.height - 2;
  box.style.setProperty("--message-width", `${Math.max(0, Math.floor(width))}px`);
  box.style.setProperty("--message-height", `${Math.max(0, Math.floor(height))}px`);
}

let hintTimer = null;
function hint(message, kind = "warn") {
  const el = $('[data-role="hint"]');
  if (!el) return;
  clearTimeout(hintTimer);
  el.textContent = message;
  el.className = `notice ${kind}`;
  el.hidden = false;
  placeMessages();
  hintTimer = setTimeout(() => (el.hidden = true), HINT_MS);
}

/* The server's own notice (blind mode switched on an item already shown) goes away as a hint does; an error stays
 * until the next answer replaces the view. */
let noticeTimer = null;
function showServerMessages() {
  placeMessages();
  clearTimeout(noticeTimer);
  const notice = $('[data-role="notice"]');
  if (notice) noticeTimer = setTimeout(() => (notice.hidden = true), HINT_MS);
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

/* ---------- whose quotes: the texts highlight one judge's quoted passages at a time ---------- */

const judgeCards = () => [...root.querySelectorAll('#audit-view [data-role="judge"]')];

/* Light the marks of ``card``'s judge and no other's; its card says so (quotes-lit, its button pressed). */
function showQuotesOf(card, { reveal = false } = {}) {
  const number = card.dataset.judgeNumber;
  for (const other of judgeCards()) {
    other.classList.toggle("quotes-lit", other === card);
    const button = other.querySelector('[data-role="show-quotes"]');
    if (button) button.setAttribute("aria-pressed", String(other === card));
  }
  for (const mark of root.querySelectorAll('#audit-view mark[data-role="quote"]')) {
    mark.toggleAttribute("data-lit", mark.dataset.judges.split(" ").includes(number));
  }
  const owner = $('[data-role="quotes-owner"]');
  if (owner) {
    owner.dataset.quotes = card.querySelector('[data-role="show-quotes"]') ? "some" : "none";
    owner.querySelector('[data-role="quotes-owner-name"]').textContent = card.dataset.judge;
  }
  state.quotesOf = { item: shownItem(), judge: card.dataset.judge };
  if (reveal) {
    // The texts, not the page, move: the highlights stay in view, and the line above them names the judge.
    for (const text of root.querySelectorAll("#audit-view .audit-texts .text")) bringLitMarkIntoView(text);
    bringCardIntoItsBox(card);
  }
}

/* Where the judges' answers scroll in a box of their own (a narrow window), the chosen card comes into it. */
function bringCardIntoItsBox(card) {
  const list = card.closest('[data-role="judges"]');
  if (!list || list.scrollHeight <= list.clientHeight) return;
  const box = list.getBoundingClientRect();
  const rect = card.getBoundingClientRect();
  if (rect.top < box.top) list.scrollTop -= box.top - rect.top;
  else if (rect.bottom > box.bottom) list.scrollTop += Math.min(rect.bottom - box.bottom, rect.top - box.top);
}

/* A text whose highlighted passages are all out of its box scrolls (the box alone, not the page) to the first. */
function bringLitMarkIntoView(text) {
  const lit = [...text.querySelectorAll("mark[data-lit]")];
  if (!lit.length) return;
  const box = text.getBoundingClientRect();
  const inView = (mark) => {
    const rect = mark.getBoundingClientRect();
    return rect.bottom > box.top && rect.top < box.bottom;
  };
  if (lit.some(inView)) return;
  const padding = parseFloat(getComputedStyle(text).paddingTop) || 0;
  text.scrollTop += lit[0].getBoundingClientRect().top - box.top - padding;
}

/* j: the next judge's quotes, k: the previous one's (round the list). */
function stepJudge(step) {
  const cards = judgeCards();
  if (!cards.length) {
    hint(stage() === "blind"
      ? "Give your own score first (1-5): the judges' answers and their quotes are hidden until then."
      : "No judge's answer is shown: no quote to highlight.");
    return;
  }
  const at = cards.findIndex((card) => card.classList.contains("quotes-lit"));
  showQuotesOf(cards[(at + step + cards.length) % cards.length], { reveal: true });
}

/* After a swap: the same item keeps the judge chosen for it (blind mode switched); another starts at the top one's. */
function restoreQuotes() {
  const chosen = state.quotesOf;
  if (!chosen || chosen.item !== shownItem()) {
    state.quotesOf = null;
    return;
  }
  const card = judgeCards().find((el) => el.dataset.judge === chosen.judge);
  if (card) showQuotesOf(card);
}

/* ---------- more to read: a text that goes on below its box says so ---------- */

function markMoreBelow(text) {
  const cue = text.parentElement.querySelector('[data-role="more-below"]');
  if (!cue) return;
  cue.hidden = text.scrollHeight - text.scrollTop - text.clientHeight < 2;
  // Off the scroll bar: the fade covers the text alone.
  cue.style.right = `${Math.max(1, text.offsetWidth - text.clientWidth - 1)}px`;
}

function markTexts() {
  for (const text of root.querySelectorAll("#audit-view .audit-texts .text")) markMoreBelow(text);
}

// Scrolling does not bubble: caught on the way down.
root.addEventListener("scroll", (event) => {
  if (event.target.matches && event.target.matches(".audit-texts .text")) markMoreBelow(event.target);
}, true);
window.addEventListener("resize", () => {
  markTexts();
  placeMessages();
});
window.addEventListener("load", markTexts); // the texts' final size, fonts and all

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
  restoreQuotes();
  markTexts();
  showServerMessages();
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

// A click on a judge's card (its button, or anywhere but a link or its raw answer) shows that judge's quotes.
root.addEventListener("click", (event) => {
  const card = event.target.closest && event.target.closest('[data-role="judge"]');
  if (!card || event.target.closest("a, summary, details")) return;
  if (window.getSelection && String(window.getSelection()).length) return; // selecting its words to copy them
  showQuotesOf(card, { reveal: true });
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
    case "j":
    case "J":
      event.preventDefault();
      stepJudge(1);
      break;
    case "k":
    case "K":
      event.preventDefault();
      stepJudge(-1);
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
markTexts();
showServerMessages();
root.classList.add("ready");
