/* More to read: a text that goes on below its box says so, kept true as the text scrolls and the window resizes. */

import { root } from "./state.js";

function markMoreBelow(text) {
  const cue = text.parentElement.querySelector('[data-role="more-below"]');
  if (!cue) return;
  cue.hidden = text.scrollHeight - text.scrollTop - text.clientHeight < 2;
  // Off the scroll bar: the fade covers the text alone.
  cue.style.right = `${Math.max(1, text.offsetWidth - text.clientWidth - 1)}px`;
}

export function markTexts() {
  for (const text of root.querySelectorAll("#audit-view .audit-texts .text")) markMoreBelow(text);
}

export function wireTexts() {
  // Scrolling does not bubble: caught on the way down.
  root.addEventListener("scroll", (event) => {
    if (event.target.matches && event.target.matches(".audit-texts .text")) markMoreBelow(event.target);
  }, true);
}
