/* Rendering the summary and the source: sentences, saved spans, the linked source text. */

import { SEVERITY, activeSpan, categoryOf, leafLabels, make, previewedOther, sides, state, visibleSpans } from "./state.js";
import { lineLayer } from "./cues.js";
import { captureSelection, restoreSelection } from "./selection.js";
import { applyShading } from "./shading.js";

/* Split a text at every sentence and mark boundary. Sentences become
 * [data-sentence] elements; gaps between them stay plain text; pieces covered
 * by marks get a .seg element. textContent stays exactly the original text. */
export function renderText(sideName) {
  const side = sides[sideName];
  const { index, sentences } = side;
  const n = index.length;
  const marks = sideName === "summary" ? summaryMarks() : sourceMarks();
  const bounds = new Set([0, n]);
  for (const [a, b] of sentences) {
    bounds.add(index.clamp(a));
    bounds.add(index.clamp(b));
  }
  for (const mark of marks) {
    bounds.add(index.clamp(mark.start));
    bounds.add(index.clamp(mark.end));
  }
  const cuts = [...bounds].sort((a, b) => a - b);
  const levels = sideName === "summary" ? underlineLevels(marks) : null;
  const fragment = document.createDocumentFragment();
  let sentencePos = 0;
  let sentenceEl = null;
  let sentenceElIndex = -1;
  for (let i = 0; i + 1 < cuts.length; i++) {
    const a = cuts[i];
    const b = cuts[i + 1];
    while (sentencePos < sentences.length && sentences[sentencePos][1] <= a) sentencePos++;
    const sentence = sentences[sentencePos];
    let parent = fragment;
    if (sentence && sentence[0] <= a && b <= sentence[1]) {
      if (sentenceElIndex !== sentencePos) {
        sentenceEl = make("span", "sentence");
        sentenceEl.dataset.sentence = String(sentencePos);
        fragment.appendChild(sentenceEl);
        sentenceElIndex = sentencePos;
      }
      parent = sentenceEl;
    } else {
      sentenceElIndex = -1;
    }
    const textNode = document.createTextNode(index.slice(a, b));
    const covering = marks.filter((mark) => mark.start <= a && b <= mark.end);
    if (!covering.length) {
      parent.appendChild(textNode);
    } else {
      const seg = sideName === "summary" ? summarySegment(covering, levels) : sourceSegment(covering);
      seg.appendChild(textNode);
      parent.appendChild(seg);
    }
  }
  const saved = captureSelection(side.el);
  side.el.replaceChildren(fragment);
  restoreSelection(side.el, saved);
  applyShading(sideName);
}

function summaryMarks() {
  const preview = previewedOther();
  const marks = visibleSpans();
  return preview ? marks.concat([{ start: preview.start, end: preview.end, kind: "preview" }]) : marks;
}

function sourceMarks() {
  const marks = [];
  const span = activeSpan();
  if (span && span.source_start !== null && span.source_end !== null) {
    marks.push({ start: span.source_start, end: span.source_end, kind: "linked" });
  }
  const preview = previewedOther();
  if (preview && preview.source_start !== null && preview.source_end !== null) {
    marks.push({ start: preview.source_start, end: preview.source_end, kind: "preview" });
  }
  return marks;
}

/* Underlines: each span gets a level (its line's height under the text) that no span overlapping it shares, the
 * same level wherever it runs, so its line stays straight across pieces; spans in text order, longer first. */
const UNDERLINE = 2; // px, one line
const UNDERLINE_GAP = 2; // px between two lines: two colours that touch read as one thicker line
const MAX_LEVELS = 3; // more would reach the next line of text; further spans are counted instead (data-more)

function underlineLevels(marks) {
  const spans = marks
    .filter((mark) => mark.kind !== "preview")
    .sort((a, b) => a.start - b.start || b.end - b.start - (a.end - a.start));
  const levels = new Map();
  const placed = [];
  for (const span of spans) {
    const overlapping = placed.filter((other) => other.start < span.end && span.start < other.end);
    const taken = new Set(overlapping.map((other) => levels.get(other.key)));
    let level = 0;
    while (taken.has(level)) level++;
    levels.set(span.key, level);
    placed.push(span);
  }
  return levels;
}

/* Background layers, one line per level from the words down (level 0 right under the words, each further level 4 px
 * lower, wherever the piece's padding ends), each in its span's colour and its label's pattern (cues.js): solid,
 * dashed, dotted…, so labels differ without colour too. A level no covering span holds is left empty, like a gap. */
function underlines(spans, levels) {
  const byLevel = new Map();
  for (const span of spans) {
    const level = levels.get(span.key) ?? 0;
    if (level < MAX_LEVELS && !byLevel.has(level)) byLevel.set(level, span.labels);
  }
  const top = Math.max(-1, ...byLevel.keys());
  const layers = [...byLevel].map(([level, labels]) => {
    const { image, size } = lineLayer(labels, UNDERLINE);
    return { image, size, position: `left 0 bottom ${(top - level) * (UNDERLINE + UNDERLINE_GAP)}px` };
  });
  const depth = top < 0 ? 0 : (top + 1) * UNDERLINE + top * UNDERLINE_GAP;
  return { layers, depth, hidden: spans.length - byLevel.size };
}

function summarySegment(covering, levels) {
  const previewed = covering.some((mark) => mark.kind === "preview");
  // Shortest first: a click picks the innermost span.
  const spans = covering
    .filter((mark) => mark.kind !== "preview")
    .sort((a, b) => a.end - a.start - (b.end - b.start));
  const seg = make("span", "seg");
  if (previewed) seg.classList.add("preview");
  if (!spans.length) return seg;
  const categories = spans.map((span) => categoryOf(span.labels));
  const worst = categories.reduce((w, c) => ((SEVERITY[c] ?? -1) > (SEVERITY[w] ?? -1) ? c : w), "X");
  seg.classList.add("cat-" + worst);
  if (spans.length > 1) seg.classList.add("overlap");
  if (spans.some((span) => span.key === state.activeKey)) seg.classList.add("active");
  if (spans.some((span) => !span.id)) seg.classList.add("pending");
  if (spans.some((span) => !span.mine)) seg.classList.add("others");
  seg.dataset.spans = spans.map((span) => span.key).join(" ");
  // One underline per covering span in its label's colour and pattern, stacked with gaps, so two spans on the same
  // words show two lines. Backgrounds and padding only: the text, its selection and its offsets stay as they are.
  const { layers, depth, hidden } = underlines(spans, levels);
  seg.style.backgroundImage = layers.map((layer) => layer.image).join(", ");
  seg.style.backgroundSize = layers.map((layer) => layer.size).join(", ");
  seg.style.backgroundPosition = layers.map((layer) => layer.position).join(", ");
  seg.style.backgroundRepeat = "repeat-x";
  seg.style.paddingBottom = `${depth}px`;
  if (hidden > 0) seg.dataset.more = `+${hidden}`;
  seg.title = spans.map((span) => leafLabels(span.labels).join(", ") + (span.mine ? "" : ` (${span.annotator})`)).join(" · ");
  return seg;
}

function sourceSegment(covering) {
  const seg = make("span", "seg");
  if (covering.some((mark) => mark.kind === "linked")) seg.classList.add("linked");
  if (covering.some((mark) => mark.kind === "preview")) seg.classList.add("preview");
  return seg;
}
