/* The key a shortcut reads from a keydown, Caps Lock or not: one answer for every page with shortcuts (the span, pair
 * labeling and audit pages), as typing.js is one answer for when they stay quiet.
 *
 * Caps Lock turns q into Q, and Shift+q into q, so a page reading event.key as it comes sees another key. Here a
 * letter reads as it would with Caps Lock off: in lower case, or, where the page gives Shift+letter a meaning of its
 * own (`shiftedLetters`: the span page's Shift+D and Shift+label keys), in upper case while Shift is held. On a page
 * without such keys Shift changes no letter (Shift+h is h), as it always did there. Every other key (digits, "?",
 * "[", Enter, the arrows) reads as the event gives it. */

export function shortcutKey(event, { shiftedLetters = false } = {}) {
  const key = event.key;
  if (typeof key !== "string" || key.length !== 1) return key;
  const cased = shiftedLetters && event.shiftKey ? key.toUpperCase() : key.toLowerCase();
  // A letter whose other case is two characters (ß, İ) is left as it is.
  return cased.length === 1 ? cased : key;
}
