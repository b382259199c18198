/* Semantic highlighting: the other text's sentences shaded by similarity with the selection. */

import { $, activeSpan, make, page, sides, sleep } from "./state.js";
import { scrollToShow } from "./dom.js";
import { isSessionRefusal, jsonHeaders, noteAnswer } from "./http.js";

const SHADE_CLASSES = ["shade-0", "shade-1", "shade-2", "shade-3", "shade-4", "closest"];
// While the server loads its model it answers 503 + Retry-After; give up after this many tries.
const LOADING_TRIES = 60;

export function applyShading(sideName) {
  const shading = sides[sideName].shading;
  for (const el of sides[sideName].el.querySelectorAll("[data-sentence]")) {
    el.classList.remove(...SHADE_CLASSES);
    el.removeAttribute("data-similarity");
    el.removeAttribute("data-rank");
    el.removeAttribute("title");
    if (!shading) continue;
    const i = Number(el.dataset.sentence);
    const value = shading.byIndex.get(i);
    const rank = shading.closest.indexOf(i) + 1;
    if (value) {
      const score = Number(value.similarity).toFixed(3);
      el.dataset.similarity = score;
      el.classList.add("shade-" + Math.max(0, Math.min(4, value.shade | 0)));
      el.title = `similarity ${score}` + (rank ? ` · closest #${rank}` : "");
    }
    if (rank) {
      el.classList.add("closest");
      el.dataset.rank = String(rank);
    }
  }
}

/* One line under the text being shaded: "loading similarity…" or "nothing … matches closely". */
const simNote = $('[data-role="similarity-note"]');
const simState = make("p", "similarity-state muted");
simState.setAttribute("aria-live", "polite");

function showSimState(target, role, text) {
  simState.dataset.role = role;
  simState.textContent = text;
  if (simState.previousElementSibling !== sides[target].el) sides[target].el.after(simState);
}

const hideSimState = () => simState.remove();

let simSequence = 0;
let simAbort = null;
let lastQueried = "";

/* Forget the shading and any answer still on its way. */
export function resetSimilarity() {
  lastQueried = "";
  simSequence++;
  sides.summary.shading = null;
  sides.source.shading = null;
  hideSimState();
}

async function askServer(selection, signal) {
  try {
    return await fetch(page.api.similarity, {
      method: "POST",
      headers: jsonHeaders(),
      credentials: "same-origin",
      body: JSON.stringify({ side: selection.side, start: selection.start, end: selection.end }),
      signal,
    });
  } catch (error) {
    return null;
  }
}

async function readJson(response) {
  try {
    return await response.json();
  } catch (error) {
    return null;
  }
}

export async function requestSimilarity(selection) {
  const key = `${selection.side}:${selection.start}:${selection.end}`;
  if (key === lastQueried) return;
  lastQueried = key;
  const sequence = ++simSequence;
  const current = () => sequence === simSequence; // false once a newer selection was made
  const expected = selection.side === "summary" ? "source" : "summary";
  if (simAbort) simAbort.abort();
  simAbort = typeof AbortController === "function" ? new AbortController() : null;
  let response = null;
  for (let attempt = 1; ; attempt++) {
    response = await askServer(selection, simAbort ? simAbort.signal : undefined);
    if (!current()) return;
    if (!response) {
      lastQueried = "";
      hideSimState();
      return;
    }
    if (response.status !== 503 || attempt >= LOADING_TRIES) break;
    const data = await readJson(response);
    if (!current()) return;
    if (!(data && data.loading)) break;
    showSimState(expected, "similarity-loading", "loading similarity…");
    const seconds = Number(response.headers.get("Retry-After"));
    await sleep(1000 * (seconds > 0 ? Math.min(seconds, 30) : 1));
    if (!current()) return;
  }
  if (response.status === 409) {
    // No sentence vectors to compare with yet: say why, in the server's words (being computed, by which job,
    // made by another model, no worker picking the job up), or the plain note when it gives none.
    const refused = await readJson(response);
    if (!current()) return;
    hideSimState();
    const why = refused && typeof refused.detail === "string" ? refused.detail.trim() : "";
    simNote.textContent = why ? `highlighting not available yet: ${why}` : simNote.dataset.plain;
    simNote.hidden = false;
    lastQueried = "";
    return;
  }
  if (!response.ok) {
    lastQueried = "";
    const refused = response.status === 401 || response.status === 403 ? await readJson(response) : null;
    if (!current()) return;
    if (isSessionRefusal(response.status, refused)) {
      // Logged out, or another user logged in since (another tab): no shading, and the page says why (the banner
      // says what to do) rather than leaving the texts plain without a word.
      noteAnswer("POST", response, refused);
      const why = response.status === 401 ? "you are logged out" : "another user has logged in in this browser";
      showSimState(expected, "similarity-refused", `no shading: ${why} — log in again in another tab`);
      return;
    }
    hideSimState();
    return;
  }
  const data = await readJson(response);
  if (!current() || !data) return;
  noteAnswer("POST", response, data); // the session works again: the banner goes, failed saves are tried again
  simNote.hidden = true;
  const target = data.target || expected;
  const closest = Array.isArray(data.closest) ? data.closest : [];
  sides[target].shading = {
    byIndex: new Map((data.sentences || []).map((sentence) => [sentence.index, sentence])),
    closest,
    query: { side: selection.side, start: selection.start, end: selection.end }, // what it answers (L checks it)
  };
  applyShading(target);
  revealClosest(target, selection);
  if (closest.length) hideSimState();
  else showSimState(target, "no-match", `nothing in the ${target} matches closely`);
}

/* The person scrolled a text's box themselves (wheel, touch, its scroll bar, keys) this recently: the shading leaves
 * that box where they put it. */
const OWN_SCROLL_MS = 2000;
const SCROLL_KEYS = new Set(["ArrowUp", "ArrowDown", "PageUp", "PageDown", "Home", "End", " "]);
const scrolledAt = { summary: -Infinity, source: -Infinity };
for (const name of ["summary", "source"]) {
  const el = sides[name].el;
  const mark = () => (scrolledAt[name] = performance.now());
  el.addEventListener("wheel", mark, { passive: true });
  el.addEventListener("touchmove", mark, { passive: true });
  el.addEventListener("pointerdown", (event) => {
    if (event.target === el) mark(); // on the box itself, not on its words: the scroll bar
  });
  el.addEventListener("keydown", (event) => {
    if (SCROLL_KEYS.has(event.key) && !event.ctrlKey && !event.altKey && !event.shiftKey) mark();
  });
}

/* The closest sentence, when the shading outlines one outside the box's visible part (a long text), is scrolled into
 * view inside its box, never the window, the least that shows it. Not while the person scrolls that box, and not
 * for the chosen span's own words when it is linked: its linked text is what is shown there (revealActive). */
function revealClosest(target, query) {
  const shading = sides[target].shading;
  if (!shading || !shading.closest.length) return;
  if (performance.now() - scrolledAt[target] < OWN_SCROLL_MS) return;
  const span = activeSpan();
  if (span && span.source_start !== null && query.side === "summary" && query.start === span.start && query.end === span.end) {
    return;
  }
  const box = sides[target].el;
  scrollToShow(box, [box.querySelector(`[data-sentence="${shading.closest[0]}"]`)]);
}

export function showSimilarityNote() {
  simNote.hidden = false;
}
