/* Where words and user-perceived characters begin and end in a text, in UTF-16 units, for the mouse's word snap
 * (selection.js) and the caret keys (caret.js). Offsets sent to the server stay code points (textindex.js).
 *
 * Words are runs of word characters (a comma or full stop between digits among them: 38,000), as they always
 * were for text written with spaces; inside such a run the browser's Intl.Segmenter adds a boundary only next to
 * a script written without spaces (Chinese, Japanese, Thai, ...), so 北京大学发现了新方法 splits into its words
 * while "Lintown's" and "well-known" stay one word each.
 * Characters are grapheme clusters (👨‍👩‍👧, 🇫🇷, e + U+0301), the steps Chromium's own Shift+arrows take. Where
 * Intl.Segmenter is missing, runs stay whole and the caret steps by code point, as before. */

export const WORD_CHAR = /[\p{L}\p{N}\p{M}_'\u2019-]/u;

// Scripts whose words are not separated by spaces: only beside these may the segmenter cut a run.
const UNSPACED_CHAR =
  /[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Thai}\p{scx=Lao}\p{scx=Khmer}\p{scx=Myanmar}]/u;

const DIGIT = /\p{Nd}/u;

/* A comma or full stop between two digits belongs to the number: "38,000-pound" and "12.4" are one word each for the
 * caret's word steps and the mouse's word snap, as "well-known" is (a sentence's final full stop is not). */
const joinsDigits = (text, at) =>
  (text[at] === "," || text[at] === ".") && DIGIT.test(text[at - 1] || "") && DIGIT.test(text[at + 1] || "");

export const isWordAt = (text, at) =>
  at >= 0 && at < text.length && (WORD_CHAR.test(text[at]) || joinsDigits(text, at));

/* The language the element's text is written in, for the segmenter: the nearest lang attribute (the page's own
 * on <html> at the least), or undefined for the browser's default. */
export function textLocale(element) {
  const marked = element && element.closest ? element.closest("[lang]") : null;
  return (marked && marked.lang) || document.documentElement.lang || undefined;
}

// Segmenters by granularity and locale, each with the segments of the last two texts it read (summary, source).
const segmenters = new Map();
const TEXTS_KEPT = 2;

function makeSegmenter(granularity, locale) {
  try {
    return new Intl.Segmenter(locale, { granularity });
  } catch (error) {
    // A lang attribute that is no valid language tag: the browser's default still segments the text.
    if (error instanceof RangeError) return new Intl.Segmenter(undefined, { granularity });
    throw error;
  }
}

/* The text's segments (whose containing() finds the segment around an offset), or null without Intl.Segmenter. */
function segmentsOf(text, granularity, locale) {
  if (typeof Intl === "undefined" || typeof Intl.Segmenter !== "function") return null;
  const key = `${granularity}|${locale || ""}`;
  let entry = segmenters.get(key);
  if (!entry) {
    entry = { segmenter: makeSegmenter(granularity, locale), texts: new Map() };
    segmenters.set(key, entry);
  }
  let segments = entry.texts.get(text);
  if (!segments) {
    if (entry.texts.size >= TEXTS_KEPT) entry.texts.delete(entry.texts.keys().next().value);
    segments = entry.segmenter.segment(text);
    entry.texts.set(text, segments);
  }
  return segments;
}

/* Whether a word begins or ends at UTF-16 offset at: beside a non-word character, as before, or inside a run of
 * word characters where the segmenter breaks next to a character of an unspaced script. */
export function isWordBoundary(text, at, locale) {
  if (!isWordAt(text, at - 1) || !isWordAt(text, at)) return true;
  if (!UNSPACED_CHAR.test(text[at - 1]) && !UNSPACED_CHAR.test(text[at])) return false;
  const segments = segmentsOf(text, "word", locale);
  return segments !== null && segments.containing(at).index === at;
}

/* The start of the word around at (at itself when it is a word boundary). */
export function wordStart(text, at, locale) {
  while (at > 0 && !isWordBoundary(text, at, locale)) at--;
  return at;
}

/* The end of the word around at (at itself when it is a word boundary). */
export function wordEnd(text, at, locale) {
  while (at < text.length && !isWordBoundary(text, at, locale)) at++;
  return at;
}

/* One code point on, never between the two halves of a surrogate pair: the step without Intl.Segmenter. */
function codePointStop(text, at, forward) {
  if (forward) return at >= text.length ? at : at + (text.codePointAt(at) > 0xffff ? 2 : 1);
  if (at <= 0) return 0;
  return at - (at >= 2 && text.codePointAt(at - 2) > 0xffff ? 2 : 1);
}

/* One user-perceived character on from at, so → crosses 👨‍👩‍👧 or 🇫🇷 in one press and never stops between e and
 * its accent, agreeing with the browser's Shift+→. */
export function graphemeStop(text, at, forward, locale) {
  if (forward ? at >= text.length : at <= 0) return Math.max(0, Math.min(at, text.length));
  const segments = segmentsOf(text, "grapheme", locale);
  if (!segments) return codePointStop(text, at, forward);
  const cluster = segments.containing(forward ? at : at - 1);
  return forward ? cluster.index + cluster.segment.length : cluster.index;
}
