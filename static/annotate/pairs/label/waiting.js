/* "Nothing left for you" is often not the end: an item whose judges split needs more of them, and a new round brings
 * new items. While the page says nothing is left, it asks the queue again by itself every api.check_every_ms (none
 * while the tab is hidden; at once when it shows again), and an item that comes is shown at once, with a notice. The
 * same request as "Check again" (the queue's next item), but quiet: nothing is being saved, so the save status does
 * not flicker, and a check that fails waits for the next one. */

import { isSessionRefusal, send } from "../../http.js";
import { notice } from "./feedback.js";
import { keepFocusInItem, renderItem, renderRefused } from "./render.js";
import { setBusy } from "./settle.js";
import { api, root, state } from "./state.js";

export const NEW_ITEM_NOTICE = "A new item needs your answer: it was opened to you while this page waited.";

let timer = null;

const waiting = () => root.dataset.state === "done";

function schedule() {
  clearTimeout(timer);
  timer = null;
  if (!waiting() || document.hidden || !(api.check_every_ms > 0)) return;
  timer = setTimeout(check, api.check_every_ms);
}

async function check() {
  timer = null;
  if (!waiting() || document.hidden) return;
  // An answer, an undo or "Check again" on its way: it will show what there is; look again later.
  if (state.busy) return schedule();
  setBusy(true);
  let result = null;
  try {
    result = await send("GET", api.next_url, undefined, { delays: [] });
  } catch (error) {
    result = null; // the server or the connection is down: the next check asks again
  } finally {
    setBusy(false);
  }
  if (waiting() && result) {
    if (result.status === 200 && result.data) {
      renderItem(result.data);
      keepFocusInItem();
      notice(NEW_ITEM_NOTICE, "ok");
    } else if (result.status === 403 && !isSessionRefusal(result.status, result.data)) {
      renderRefused(result.data, result.status); // blocked meanwhile: no more checks
    }
  }
  schedule();
}

/* Start watching: every time the page comes to its end (data-state "done"), the checks start; anything else stops
 * them. */
export function watchForWork() {
  new MutationObserver(schedule).observe(root, { attributes: true, attributeFilter: ["data-state"] });
  document.addEventListener("visibilitychange", () => {
    if (document.hidden) schedule(); // clears the timer
    else if (waiting()) check();
  });
  schedule();
}
