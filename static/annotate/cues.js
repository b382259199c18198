/* A second cue for a span's label, besides its colour: the pattern of its underline in the summary (solid, dashed,
 * dotted, …). Colours alone failed colour-blind annotators: Unwanted.Extrinsic's purple and Benign's blue look the same
 * under deuteranopia and protanopia.
 *
 * A project edits its labels (colours, hotkeys, descriptions) and has no field for a pattern, so the pattern follows
 * the label's place in the project's list of labels, the order of the toolbar's label buttons. The legend shows it: the
 * label buttons' names and the shortcut list's are underlined the same way, and the shortcut list says each pattern in
 * words. A label the project no longer offers (a retired one on an old span) gets the last pattern. */

import { categoryOf, leafLabels, page, spanColor } from "./state.js";

/* Each pattern: its words, and its dashes as [start, end] pixels within one period (none: a solid line). */
const PATTERNS = [
  { name: "solid", dashes: null, period: 0 },
  { name: "dashed", dashes: [[0, 5]], period: 8 },
  { name: "dotted", dashes: [[0, 2]], period: 5 },
  { name: "dash-dot", dashes: [[0, 6], [9, 11]], period: 14 },
  { name: "long-dashed", dashes: [[0, 14]], period: 18 },
  { name: "dash-dot-dot", dashes: [[0, 7], [9, 11], [13, 15]], period: 17 },
];

const placeOf = new Map((page.labels || []).map((label, at) => [label.name, at]));

function patternOfLabel(name) {
  const at = placeOf.has(name) ? placeOf.get(name) : PATTERNS.length - 1;
  return PATTERNS[at % PATTERNS.length];
}

/* The label that draws a span: the one spanColor takes its colour from (the first of its worst category). */
function drawingLabel(labels) {
  const category = categoryOf(labels);
  return leafLabels(labels).find((label) => categoryOf([label]) === category) || null;
}

/* The words of the pattern a label's spans are underlined with. */
export const patternName = (label) => patternOfLabel(label).name;

/* One background layer that draws a line `thickness` px tall in the span's colour and its label's pattern:
 * {image, size}, for the background-image and background-size lists. */
export function lineLayer(labels, thickness) {
  const colour = spanColor(labels);
  const label = drawingLabel(labels);
  const pattern = label ? patternOfLabel(label) : PATTERNS[0];
  if (!pattern.dashes) return { image: `linear-gradient(${colour}, ${colour})`, size: `100% ${thickness}px` };
  const stops = [];
  let at = 0;
  for (const [start, end] of pattern.dashes) {
    if (start > at) stops.push(`transparent ${at}px ${start}px`);
    stops.push(`${colour} ${start}px ${end}px`);
    at = end;
  }
  stops.push(`transparent ${at}px ${pattern.period}px`);
  return { image: `linear-gradient(90deg, ${stops.join(", ")})`, size: `${pattern.period}px ${thickness}px` };
}

/* The legend: every element that names a label (data-cue-label) gets the label's underline under its words, and every
 * data-cue-name element says the label's pattern in words (the shortcut list). */
export function showCueLegend(root) {
  for (const el of root.querySelectorAll("[data-cue-label]")) {
    const { image, size } = lineLayer([el.dataset.cueLabel], 2);
    Object.assign(el.style, {
      backgroundImage: image,
      backgroundSize: size,
      backgroundRepeat: "repeat-x",
      backgroundPosition: "left 0 bottom 0",
      paddingBottom: "3px",
    });
  }
  for (const el of root.querySelectorAll("[data-cue-name]")) el.textContent = patternName(el.dataset.cueName);
}
