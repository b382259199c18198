/* The page's data and the client-side state every other module reads.
 * User text only ever enters the DOM as text nodes / textContent (see make). */

import { TextIndex } from "./textindex.js";

export const root = document.getElementById("annotator");
export const page = JSON.parse(document.getElementById("page-data").textContent);

export const SEVERITY = { C: 0, B: 1, Q: 2, U: 3 };

export const $ = (selector, within) => (within || root).querySelector(selector);
export { make } from "./dom.js";
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export const sameValue = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/* ---------- labels ---------- */

const labelCategory = {};
const labelColor = {};
export const labelByHotkey = {};
for (const label of page.labels || []) {
  labelCategory[label.name] = label.category;
  if (label.color) labelColor[label.name] = label.color;
  if (label.hotkey) labelByHotkey[String(label.hotkey)] = label.name;
  let parent = label.name;
  while (parent.includes(".")) {
    parent = parent.slice(0, parent.lastIndexOf("."));
    if (!(parent in labelCategory)) labelCategory[parent] = label.category;
  }
}

export function categoryOf(labels) {
  let worst = null;
  for (const label of labels) {
    const category = label.startsWith("Unwanted") ? "U" : labelCategory[label];
    if (category && (worst === null || SEVERITY[category] > SEVERITY[worst])) worst = category;
  }
  return worst || "X";
}

/* FaithBench stores ["Unwanted", "Unwanted.Intrinsic"]; show only the most specific ones. */
export const leafLabels = (labels) => labels.filter((label) => !labels.some((other) => other.startsWith(label + ".")));

/* The colour a span is drawn in: its own colour of the first label of its worst category that has one (two labels
   of one category, Intrinsic and Extrinsic, then look different), else its category's. */
export function spanColor(labels) {
  const category = categoryOf(labels);
  const own = leafLabels(labels).find((label) => labelColor[label] && categoryOf([label]) === category);
  return own ? labelColor[own] : `var(--span-${category})`;
}

/* ---------- the two texts ---------- */

const sortedSentences = (list) =>
  (list || []).map((pair) => [pair[0], pair[1]]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);

export const sides = {
  summary: {
    el: $('[data-role="summary"]'),
    index: new TextIndex(page.summary || ""),
    sentences: sortedSentences(page.summary_sentences),
    shading: null,
  },
  source: {
    el: $('[data-role="source"]'),
    index: new TextIndex(page.source || ""),
    sentences: sortedSentences(page.source_sentences),
    shading: null,
  },
};

/* ---------- spans ---------- */

export const state = {
  spans: [],
  activeKey: null,
  preview: null, // index of the other annotator's span shown in the texts (round 2)
  done: Boolean(page.done),
  doneCount: page.done_count || 0,
  busyDone: false,
};
let keySequence = 0;

export function makeSpan(data) {
  return {
    key: data.id ? "s" + data.id : "new" + ++keySequence,
    id: data.id || null,
    version: data.version || null,
    start: data.start,
    end: data.end,
    text: data.text,
    labels: (data.labels || []).slice(),
    note: data.note || "",
    serverNote: data.note || "",
    source_start: data.source_start ?? null,
    source_end: data.source_end ?? null,
    source_text: data.source_text ?? null,
    annotator: data.annotator || "",
    mine: data.mine !== false,
    state: data.id ? "saved" : "saving", // saved | saving | failed
    error: null,
    deleted: false,
    epoch: 0,
    queue: Promise.resolve(),
    noteTimer: null,
    discardedNote: null, // a note typed here that a newer version from another tab replaced (saving.js)
    retryable: false, // a failed save that is tried again on its own (the connection, the server, the login session)
  };
}
for (const span of page.spans || []) state.spans.push(makeSpan(span));

export const visibleSpans = () =>
  state.spans
    .filter((span) => !span.deleted)
    .sort((a, b) => a.start - b.start || a.end - b.end || (a.id || 1e12) - (b.id || 1e12));
export const spanByKey = (key) => state.spans.find((span) => span.key === key) || null;
export const activeSpan = () => {
  const span = spanByKey(state.activeKey);
  return span && !span.deleted ? span : null;
};
export const editable = (span) => Boolean(page.can_edit && span && span.mine);
export const forgetSpan = (span) => {
  state.spans = state.spans.filter((other) => other !== span);
  if (state.activeKey === span.key) state.activeKey = null;
};

/* ---------- round 2: the others' round-1 spans ---------- */

export const others = page.others && Array.isArray(page.others.spans) ? page.others : null;

export function previewedOther() {
  return others && state.preview !== null ? others.spans[state.preview] || null : null;
}

export function agreesWithMine(other) {
  const category = categoryOf(other.labels || []);
  return visibleSpans().some(
    (span) => span.mine && span.start < other.end && other.start < span.end && categoryOf(span.labels) === category,
  );
}
