/* The pair labeling page and the API: serving the next item, answering, undo, and their refusals. */

import { PATIENT_RETRY_DELAYS_MS, errorMessage, onResendTime, send } from "../../http.js";
import { hideTooFast, notice, setProgress, setStatus, showFailure } from "./feedback.js";
import { keepFocusInItem, renderEnd, renderItem, renderRefused } from "./render.js";
import { answerRefused, setBusy } from "./settle.js";
import { $, LABEL_WORDS, api, els, root, state } from "./state.js";

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

/* Every request waits out a dropped connection or a server restart as the span page's saves do (about 45 s of tries,
 * http.js), the status saying "Failed — retrying" meanwhile. */
async function request(method, url, body) {
  state.status.pending++;
  state.status.error = null;
  state.status.hint = null;
  setStatus();
  try {
    return await send(method, url, body, { delays: PATIENT_RETRY_DELAYS_MS });
  } catch (error) {
    state.status.error = error.message;
    state.status.hint = "it is sent again on its own once the server answers (or press the key again)";
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

export async function loadNext() {
  setBusy(true);
  try {
    const result = await request("GET", api.next_url);
    // The first item never came (the connection was down as the page opened): asked for again on its own.
    if (!result && !state.item) state.unsent = { next: true };
    else if (state.unsent && state.unsent.next) state.unsent = null;
    showServed(result);
  } finally {
    setBusy(false);
  }
}

/* What gave up, sent again when the server may take it (http.js: onResendTime): the answer to the item still on
 * screen (after its ~45 s of tries, or a logged-out session put right in another tab), or the first item. Another
 * answer, an undo or another item on screen replaces it. */
onResendTime(() => {
  const unsent = state.unsent;
  if (!unsent || state.busy) return;
  if (unsent.next) {
    if (!state.item && root.dataset.state === "loading") loadNext();
    else state.unsent = null;
    return;
  }
  if (state.item && state.item.id === unsent.item) answer(unsent.label);
  else state.unsent = null;
});

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
export async function answer(label) {
  const item = state.item;
  if (!item) return;
  if (answerRefused()) return;
  state.unsent = null;
  hideTooFast();
  setBusy(true);
  const button = root.querySelector(`[data-label="${CSS.escape(label)}"]`);
  if (button) button.setAttribute("aria-pressed", "true");
  els.item.classList.add("answering");
  try {
    const result = await request("POST", api.judgement_url.replace("/0/", `/${item.id}/`), { label });
    if (!result) {
      // Retries ran out: the item stays on screen, and the answer is sent again on its own once the server answers;
      // the status says what failed.
      els.item.classList.remove("answering");
      if (button) button.setAttribute("aria-pressed", "false");
      state.unsent = { item: item.id, label };
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
      // The item stays, unanswered: the answer is sent again once the session is put right (back in this tab after
      // logging in again in another), or by the same key.
      showSessionRefusal(session);
      if (!session.notice) state.unsent = { item: item.id, label };
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
export async function undo() {
  if (state.busy) return;
  state.unsent = null;
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
