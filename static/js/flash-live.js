/* Announce the flash messages a page was served with (WCAG 4.1.3).
 *
 * The messages list is there from the start, so a role on it is not announced reliably: screen readers speak a live
 * region's changes, not what it held when the page loaded. base.html therefore renders two empty live regions next
 * to the list, and once the page has loaded this copies the messages' text into them: errors into the alert region
 * (assertive), the rest into the status one (polite). The short wait lets screen readers register the empty regions
 * first. The visible list stays as it is. */

(() => {
  "use strict";

  const SETTLE_MS = 300;

  function announce() {
    const list = document.querySelector('[data-role="messages"]');
    const polite = document.querySelector('[data-role="flash-live"]');
    const assertive = document.querySelector('[data-role="flash-alert"]');
    if (!list || !polite || !assertive) return;
    for (const item of list.querySelectorAll("li")) {
      const text = item.textContent.trim();
      if (!text) continue;
      const line = document.createElement("p");
      line.textContent = text;
      (item.classList.contains("error") ? assertive : polite).append(line);
    }
  }

  window.addEventListener("load", () => window.setTimeout(announce, SETTLE_MS));
})();
