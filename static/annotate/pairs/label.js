/* The pair labeling page: one key per answer (h, n, ?), the next item at once, undo with u.
 * The answer's 201 carries the next item, so one round trip saves and serves. Offsets from the
 * API are Unicode code points and go through TextIndex; texts enter the DOM only as text nodes. */

import { TextIndex } from "../textindex.js";
import { errorMessage, onRetrying, send } from "../http.js";
import { make } from "../dom.js";
import { isTyping } from "../../js/typing.js";
import { showSaveStatus } from "../../js/savestatus.js";

const NOTICE_MS = 8000;
/* How long a new item is on screen before an answer key (or click) counts. A double press of h or n, 120-250 ms
 * apart, saved its second answer on the item that followed, unread: the busy guard only covers the first answer's
 * round trip (~55 ms). 300 ms drops such a second press (and a fast key-bounce), yet is shorter than anyone reads a
 * span in its two texts, so a judge who reads never waits for it. The answers stay dimmed until then. */
const SETTLE_MS = 300;
/* How long the "too fast" cue stays after a press the page ignored (an item not settled yet, or an answer still on its
 * way): long enough to be read, short enough not to sit over the next answers. */
const TOO_FAST_MS = 1600;
const LABEL_BY_KEY = { h: "H", n: "N", "?": "?" };
const LABEL_WORDS = { H: "hallucination", N: "not hallucination", "?": "cannot determine" };

const root = document.getElementById("pair-labeler");
const api = JSON.parse(document.getElementById("pair-page").textContent);
const $ = (selector) => root.querySelector(selector);

const els = {
  item: $('[data-role="item"]'),
  loading: $('[data-role="loading"]'),
  original: $('[data-role="original"]'),
  perturbed: $('[data-role="perturbed"]'),
  change: $('[data-role="change"]'),
  end: $('[data-role="no-more-items"]'),
  endMessage: $('[data-role="end-message"]'),
  endDefault: $('template[data-role="end-default"]'),
  progress: $('[data-role="progress"]'),
  answered: $('[data-role="answered"]'),
  left: $('[data-role="left"]'),
  leftNoun: $('[data-role="left-noun"]'),
  status: $('[data-role="save-status"]'),
  tooFast: $('[data-role="too-fast"]'),
  notice: $('[data-role="notice"]'),
  undo: $('[data-role="undo"]'),
  guidelines: $('[data-role="guidelines"]'),
  toggleGuidelines: $('[data-role="toggle-guidelines"]'),
};

const state = {
  item: null, // the item on screen, as the API gave it
  busy: false, // an answer or an undo is on its way: keys wait, so no answer lands on an unseen item
  settled: false, // the item on screen has been shown for SETTLE_MS: its answers count
  undoNoticeFor: null, // the id of the item the "taken back: answer again" notice is about, while it shows
  answered: null, // the judge's answers in this project, from the API's progress
  status: { pending: 0, retrying: 0, error: null, hint: null },
};

/* ---------- feedback ---------- */

let noticeTimer = null;
function notice(message, kind) {
  clearTimeout(noticeTimer);
  state.undoNoticeFor = null;
  els.notice.textContent = message;
  els.notice.className = "notice " + (kind || "info");
  els.notice.hidden = false;
  noticeTimer = setTimeout(() => (els.notice.hidden = true), NOTICE_MS);
}

/* The undo notice asks for the item to be answered again: once the item changes (its new answer saved, or anything
 * else replacing it), the request is met or moot, and left up it would sit over the next item for seconds. */
function hideUndoNotice(itemId) {
  if (state.undoNoticeFor === null || state.undoNoticeFor === itemId) return;
  clearTimeout(noticeTimer);
  els.notice.hidden = true;
  state.undoNoticeFor = null;
}

function setStatus() {
  const { pending, retrying, error, hint } = state.status;
  showSaveStatus(els.status, { saving: pending > 0, retrying: retrying > 0, failure: error, hint: hint || undefined });
}

function showFailure(failure, hint) {
  state.status.error = failure;
  state.status.hint = hint || null;
  setStatus();
}

/* A press the page ignored says so, briefly, beside the answers: without it a judge mashing keys saw a few answers
 * saved and the rest vanish. Cleared by the next answer that counts. */
let tooFastTimer = null;
function showTooFast() {
  clearTimeout(tooFastTimer);
  els.tooFast.textContent = "Too fast — that press was ignored. Read the item, then answer.";
  tooFastTimer = setTimeout(hideTooFast, TOO_FAST_MS);
}

function hideTooFast() {
  clearTimeout(tooFastTimer);
  els.tooFast.textContent = "";
}
onRetrying((change) => {
  state.status.retrying += change;
  setStatus();
});

function setLeft(count) {
  els.left.textContent = String(count);
  els.leftNoun.textContent = count === 1 ? "item" : "items";
}

/* The API's `left` is the server's one count of items left for the judge (the one on screen included), the figure
 * the project page shows too: shown as it comes, never adjusted here. */
function setProgress(progress) {
  if (!progress) return;
  els.progress.hidden = false; // hidden while refused (a block); an item served after an unblock brings it back
  if (typeof progress.answered === "number") state.answered = progress.answered;
  if (state.answered !== null) els.answered.textContent = String(state.answered);
  if (typeof progress.left === "number") setLeft(progress.left);
  els.undo.disabled = !state.answered;
}

/* ---------- when an answer counts ---------- */

/* An answer counts only with an item on screen, nothing on its way, and the item settled. The page says which on
 * its root (data-answerable, "true" or "false"): the CSS dims the answers by it, and tests wait for it. */
function showAnswerable() {
  root.dataset.answerable = String(Boolean(state.item) && !state.busy && state.settled);
}

function setBusy(busy) {
  state.busy = busy;
  showAnswerable();
}

/* A new item starts unsettled; SETTLE_MS after it is put on the page (painted within a frame) its answers count. */
let settleTimer = null;
function settleNewItem() {
  clearTimeout(settleTimer);
  state.settled = false;
  showAnswerable();
  settleTimer = setTimeout(() => {
    state.settled = true;
    showAnswerable();
  }, SETTLE_MS);
}

/* ---------- rendering ---------- */

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
function keepFocusInItem() {
  const focused = document.activeElement;
  const lost = !focused || focused === document.body || !root.contains(focused) || focused.disabled
    || Boolean(focused.closest("[hidden]"));
  if (!lost && !focused.matches("[data-label]")) return;
  const anchor = state.item ? els.item : els.end;
  anchor.focus({ preventScroll: true });
}

function renderItem(item) {
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
    make("span", "old-words", item.original_words || "—"),
    document.createTextNode(" → "),
    make("span", "new-words", item.perturbed_words || ""),
  );
  els.change.title = els.change.textContent; // the line is cut short when the words are long
  for (const button of root.querySelectorAll("[data-label]")) button.setAttribute("aria-pressed", "false");
  els.item.classList.remove("answering");
  els.item.hidden = false;
  els.item.removeAttribute("aria-busy");
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
function renderEnd() {
  showEnd("done");
  els.endMessage.replaceChildren(els.endDefault.content.cloneNode(true));
  setLeft(0);
}

/* A refusal (403): a blocked judge, or a role that does not judge. No progress: none of a blocked judge's answers
 * counts and no item is left for them, so "N answered, M left" would contradict the reason beside it. */
function renderRefused(data, statusCode) {
  const blocked = Boolean(data && data.code === "blocked");
  showEnd(blocked ? "blocked" : "refused");
  const title = make("h2", "", blocked ? "You are blocked in this project" : "You cannot label in this project");
  title.dataset.role = "end-title";
  const reason = make("p", "", errorMessage(data, statusCode));
  reason.dataset.role = "end-reason";
  els.endMessage.replaceChildren(title, reason);
  els.progress.hidden = true;
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

/* ---------- talking to the API ---------- */

/* A refusal about the login session, not about the judge: logged out (401), another user logged in in this browser
 * (403 other_user: config/session_guard.py), or the page's CSRF token refused (a 403 DRF words "CSRF Failed: ...").
 * None of them says the judge may not label: the item stays on screen, unanswered, the status says the answer was not
 * saved and what to do, and the same key saves it once the session is put right. Only the queue's own refusals (a
 * role that does not judge, a block) end the page. Returns {failure, hint, banner, notice} or null: failure, the
 * status's few words (it has room for little more); hint, its tooltip; banner, the session banner's words; notice,
 * what the page's notice says when no banner comes with the refusal. */
function sessionRefusal(result) {
  const data = result.data && typeof result.data === "object" ? result.data : {};
  if (result.status === 401) {
    return {
      failure: "not saved (logged out)",
      hint: "log in again in another tab, then answer again: this item waits on this page",
      banner: "You are logged out (the session ended). Log in again in another tab, then answer again here: " +
        "the item stays on this page.",
    };
  }
  if (result.status !== 403) return null;
  if (data.code === "other_user") {
    // The banner shows the server's words, naming both users (static/annotate/http.js passes them on).
    return {
      failure: "another user logged in",
      hint: "see the message at the top: log in again as this page's user in another tab, then answer again",
    };
  }
  if (typeof data.detail === "string" && data.detail.startsWith("CSRF Failed")) {
    return {
      failure: "reload the page",
      hint: "the server refused this page's security check; reloading shows this item again",
      notice: "Not saved: the server refused this page's security check. Reload the page, then answer this item " +
        "again (your other answers are saved).",
    };
  }
  return null;
}

/* The session's refusal on the page: the status (red, never "Saved"), and the banner's words for this page, which
 * has no Retry button: the judge answers again (static/js/session.js shows the last "faithlab:session" event). */
function showSessionRefusal(refusal) {
  showFailure(refusal.failure, refusal.hint);
  if (refusal.banner) {
    document.dispatchEvent(new CustomEvent("faithlab:session", { detail: { state: "logged_out", message: refusal.banner } }));
  }
  if (refusal.notice) notice(refusal.notice, "warn");
}

async function request(method, url, body) {
  state.status.pending++;
  state.status.error = null;
  state.status.hint = null;
  setStatus();
  try {
    return await send(method, url, body);
  } catch (error) {
    state.status.error = error.message;
    return null;
  } finally {
    state.status.pending--;
    setStatus();
  }
}

/* 200 shows the item, 204 the end; the queue's refusal (a blocked judge's 403) ends the page with its reason; a
 * refusal about the login session leaves the page as it is and says so. */
function showServed(result) {
  if (!result) return;
  const session = sessionRefusal(result);
  if (result.status === 200 && result.data) renderItem(result.data);
  else if (result.status === 204) renderEnd();
  else if (session) showSessionRefusal(session);
  else if (result.status === 403) renderRefused(result.data, result.status);
  else notice(errorMessage(result.data, result.status), "warn");
}

async function loadNext() {
  setBusy(true);
  try {
    showServed(await request("GET", api.next_url));
  } finally {
    setBusy(false);
  }
}

/* An answer refused with 409, in one sentence that ends with what the page does next: it shows the next item. The
 * page words each of the queue's refusals itself: the API's words are for scripts (item numbers, the undo endpoint's
 * address, "ask for your next item", which the page does by itself). */
const REFUSED_ANSWER = {
  not_served: "Not saved: this item is no longer served to you (an undo in another tab gives it back to the queue), " +
    "so here is your next item.",
  already_judged: "Not saved: you had already answered this item, in another tab or window (to change that answer, " +
    "press u while it is your last one). Here is your next item.",
  serve_expired: "Not saved: this item stayed on your screen so long that its place went to another judge. Here is " +
    "your next item.",
  round_closed: "Not saved: this item's round was closed (an admin started the next round) while it was on your " +
    "screen. Here is your next item.",
};

function refusedAnswerNotice(data, statusCode) {
  if (data && Object.hasOwn(REFUSED_ANSWER, data.code)) return REFUSED_ANSWER[data.code];
  const reason = errorMessage(data, statusCode).replace(/[\s.;:]+$/, "");
  return `Not saved: ${reason}. Showing your next item.`;
}

/* Every way of answering (a key, a click, Enter or Space on a button) comes here: a press before the item has
 * settled, or while an answer is on its way, is dropped (the dimmed answers and a brief cue say so). */
async function answer(label) {
  const item = state.item;
  if (!item) return;
  if (state.busy || !state.settled) {
    showTooFast();
    return;
  }
  hideTooFast();
  setBusy(true);
  const button = root.querySelector(`[data-label="${CSS.escape(label)}"]`);
  if (button) button.setAttribute("aria-pressed", "true");
  els.item.classList.add("answering");
  try {
    const result = await request("POST", api.judgement_url.replace("/0/", `/${item.id}/`), { label });
    if (!result) {
      // Retries ran out: the item stays on screen for another try; the status says what failed.
      els.item.classList.remove("answering");
      if (button) button.setAttribute("aria-pressed", "false");
      return;
    }
    // 200: a retry whose first try got through (same label, nothing new recorded): the same body as the 201.
    if (result.status === 201 || result.status === 200) {
      const next = result.data ? result.data.next : null;
      setProgress(result.data && result.data.progress);
      if (next) renderItem(next);
      else renderEnd();
      keepFocusInItem();
      return;
    }
    els.item.classList.remove("answering");
    if (button) button.setAttribute("aria-pressed", "false");
    const session = sessionRefusal(result);
    if (session) {
      // The item stays, unanswered: the same key saves it once the session is put right.
      showSessionRefusal(session);
    } else if (result.status === 409) {
      // Already answered with another label (in another tab), not served to this judge, or the
      // serve expired and its slot went to someone else: say which, then carry on with what is next.
      notice(refusedAnswerNotice(result.data, result.status), "warn");
      showServed(await request("GET", api.next_url));
      keepFocusInItem();
    } else if (result.status === 403) {
      renderRefused(result.data, result.status);
      showFailure("your answer was not saved", "the reason is below");
      keepFocusInItem();
    } else {
      showFailure(errorMessage(result.data, result.status));
    }
  } finally {
    setBusy(false);
  }
}

/* The undo's own words for what it took back, from the server's answer: the item (its changed words) and the label
 * of the answer taken back, which may have been given in another tab, so never this tab's memory of its last one. */
function undoneNotice(undone) {
  const words = undone.taken_back ? LABEL_WORDS[undone.taken_back.label] : undefined;
  const span = undone.perturbed_words || undone.original_words;
  if (words && span) return `Your answer "${words}" on "${span}" was taken back: answer again.`;
  if (span) return `Your last answer, on "${span}", was taken back: answer again.`;
  return "Your last answer was taken back: answer again.";
}

/* Undo never waits for an item to settle: it takes an answer back, it does not give one. */
async function undo() {
  if (state.busy) return;
  setBusy(true);
  try {
    const result = await request("POST", api.undo_url);
    if (!result) return;
    const session = sessionRefusal(result);
    if (result.status === 200 && result.data) {
      renderItem(result.data);
      keepFocusInItem();
      notice(undoneNotice(result.data), "ok");
      state.undoNoticeFor = result.data.id;
    } else if (session) {
      showSessionRefusal(session);
    } else if (result.status === 403) {
      renderRefused(result.data, result.status);
      keepFocusInItem();
    } else if (result.status === 409 && result.data && result.data.code === "nothing_to_undo") {
      // The API's words name the item and round; the page's say what it means for the judge.
      notice("Nothing to undo: you have no answer here that can still be taken back (once the next round starts, " +
        "the answers of the round before are final).", "warn");
    } else if (result.status === 409) {
      notice(`Nothing to undo: ${errorMessage(result.data, result.status)}`, "warn");
    } else {
      notice(errorMessage(result.data, result.status), "warn");
    }
  } finally {
    setBusy(false);
  }
}

/* ---------- controls and keys ---------- */

for (const button of root.querySelectorAll("[data-label]")) {
  button.addEventListener("click", () => answer(button.dataset.label));
}
els.undo.addEventListener("click", () => undo());
$('[data-role="check-again"]').addEventListener("click", () => loadNext().then(keepFocusInItem));

function showGuidelines(show) {
  els.guidelines.open = show === undefined ? !els.guidelines.open : show;
}
els.toggleGuidelines.addEventListener("click", () => showGuidelines());
els.guidelines.addEventListener("toggle", () => {
  els.toggleGuidelines.setAttribute("aria-expanded", String(els.guidelines.open));
});

document.addEventListener("keydown", (event) => {
  if (event.defaultPrevented || event.isComposing) return;
  if (isTyping(event.target)) {
    if (event.key === "Escape") event.target.blur();
    return;
  }
  const key = event.key;
  if ((event.ctrlKey || event.metaKey) && !event.altKey && !event.shiftKey && key.toLowerCase() === "z") {
    event.preventDefault();
    if (!event.repeat) undo();
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const label = LABEL_BY_KEY[key.length === 1 ? key.toLowerCase() : key];
  if (label) {
    event.preventDefault();
    // A held key must not answer the items that follow unseen; answer() drops a press on an unsettled item.
    if (!event.repeat) answer(label);
    return;
  }
  if (key === "u" || key === "U") {
    event.preventDefault();
    if (!event.repeat) undo();
  } else if (key === "g" || key === "G") {
    event.preventDefault();
    showGuidelines();
  } else if (key === "Escape") {
    showGuidelines(false);
  }
});

/* ---------- start ---------- */

setStatus();
showAnswerable();
setProgress(api.progress);
// A blocked judge's page comes with the block shown: asking for an item would only be refused.
(api.blocked ? Promise.resolve() : loadNext()).then(() => {
  // A judge who has not answered anything here yet starts with the guidelines open.
  if (state.answered === 0) showGuidelines(true);
  root.classList.add("ready");
});
