/* Rendering the summary and the source: sentences, saved spans, the linked source text. */

import { SEVERITY, activeSpan, categoryOf, leafLabels, make, previewedOther, sides, spanColor, state, visibleSpans } from "./state.js";
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
      const seg = sideName === "summary" ? summarySegment(covering) : sourceSegment(covering);
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

function summarySegment(covering) {
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
  // One underline per covering span in its label's colour, stacked, so overlaps stay readable.
  seg.style.boxShadow = spans
    .map((span, i) => `inset 0 -${2 * (i + 1)}px 0 ${spanColor(span.labels)}`)
    .join(", ");
  seg.title = spans.map((span) => leafLabels(span.labels).join(", ") + (span.mine ? "" : ` (${span.annotator})`)).join(" · ");
  return seg;
}

function sourceSegment(covering) {
  const seg = make("span", "seg");
  if (covering.some((mark) => mark.kind === "linked")) seg.classList.add("linked");
  if (covering.some((mark) => mark.kind === "preview")) seg.classList.add("preview");
  return seg;
}
