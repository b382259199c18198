/* The settle guard of the three labeling pages (span, pair labeling, audit): for a moment after new content appears,
 * the presses that would answer it wait, so a person typing ahead never answers something they have not seen. Each
 * page keeps its own moment (its `ms`) and its own words; what they share is one behaviour: a press inside the window
 * is never dropped silently, the page says why (`refused`, which a guard cannot be made without).
 *
 * The window is measured on the clock (performance.now) when a press comes, not left to the timer alone: a timer
 * late on a busy page would otherwise hold the keys longer than the page says. The timer only tells the page when
 * the window ends (`changed`), for what it shows (dimmed answers) and what tests wait for. */

export function settleGuard({ ms, refused, changed = () => {} }) {
  if (!(ms >= 0)) throw new TypeError("settleGuard: ms must be a number of milliseconds, 0 or more");
  if (typeof refused !== "function") {
    throw new TypeError("settleGuard: refused() is required: a press inside the settle window is never dropped silently");
  }
  let shownAt = 0;
  let settled = true; // nothing has appeared yet: nothing to wait for
  let timer = null;

  function end() {
    clearTimeout(timer);
    timer = null;
    if (settled) return;
    settled = true;
    changed(true);
  }

  return {
    ms,

    /* New content is on screen now: the presses that answer it wait `ms` from here (a restart inside the window
     * starts it again). */
    restart() {
      clearTimeout(timer);
      shownAt = performance.now();
      settled = false;
      changed(false);
      timer = setTimeout(end, ms);
    },

    /* Whether the content on screen has been shown for `ms`. */
    get settled() {
      if (!settled && performance.now() - shownAt >= ms) end();
      return settled;
    },

    /* The check a press makes before it acts: true when it came inside the window, and the page has said so
     * (the caller stops); false when it counts. */
    refuses() {
      if (this.settled) return false;
      refused();
      return true;
    },
  };
}
