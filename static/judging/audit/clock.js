/* The item clock: the server's count at render, then ticking here each second. */

import { $ } from "./state.js";

let clockStarted = 0;
let clockBase = 0;

/* Restart from the count the server rendered with the item (after each swap). */
export function startClock() {
  const el = $('[data-role="item-time"]');
  clockStarted = performance.now();
  clockBase = el ? Number(el.dataset.elapsed) || 0 : 0;
}

export function tickClock() {
  setInterval(() => {
    const el = $('[data-role="item-clock"]');
    if (!el) return;
    const seconds = Math.floor(clockBase + (performance.now() - clockStarted) / 1000);
    el.textContent = seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  }, 1000);
}
