/* When the server may take writes again, and the waits between tries: shared by every page that sends work again on
 * its own (the span page's saves and the pair page's answers through static/annotate/http.js, the audit page's htmx
 * forms through static/judging/audit/resend.js). It reads nothing of a page's own state. */

/* For a page whose saves must outlive a server restart or a dropped connection (the span page): about 45 s in all,
 * never more than 5 s between two tries, so a save goes through within seconds of the server answering again. */
export const PATIENT_RETRY_DELAYS_MS = [500, 1000, 2000, 3000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000];

/* The waits between tries end early when the server is heard from again (any answer to any request of this page)
 * or the browser says it is back online: every write waiting for its next try goes at once. */
const sleepers = new Set();
export function pause(ms) {
  return new Promise((resolve) => {
    const wake = () => {
      clearTimeout(timer);
      sleepers.delete(wake);
      resolve();
    };
    const timer = setTimeout(wake, ms);
    sleepers.add(wake);
  });
}
export function wakeWaitingWrites() {
  for (const wake of [...sleepers]) wake();
}

/* The page learns here when the server may take writes again: a request was answered 2xx, or the browser is back
 * online. The span page then tries again the saves that gave up (see saving.js). */
const reachableListeners = [];
export function onReachable(listener) {
  reachableListeners.push(listener);
}
export function reachable() {
  for (const listener of reachableListeners) listener();
}
window.addEventListener("online", () => {
  wakeWaitingWrites();
  reachable();
});

/* Work that failed for the connection, the server or the login session, and that the page sends again on its own (the
 * span page's unsaved spans, the pair page's answer, the audit page's verdict): its listeners are called when the
 * server may take it again. That is when a request of the page is answered 2xx or the browser is back online
 * (onReachable), when the tab comes back into view or the window gets the focus (the person may have logged in
 * again in another tab, or the laptop woken up), and every STALLED_RETRY_MS while the tab is in view. */
export const STALLED_RETRY_MS = 30000;
const resendListeners = [];
let resendTimer = null;
export function onResendTime(listener) {
  resendListeners.push(listener);
  if (resendTimer !== null) return;
  onReachable(resendTime);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) resendTime();
  });
  window.addEventListener("focus", resendTime);
  resendTimer = setInterval(() => {
    if (!document.hidden) resendTime();
  }, STALLED_RETRY_MS);
}
function resendTime() {
  for (const listener of resendListeners) listener();
}

/* The wait before a page's own next try of a request it sends without send() (the audit page's htmx forms): the same
 * delays, ended early in the same way (an answer, the browser back online). Resolves true after the wait, or false
 * at once when the `attempt`-th try was the last. */
export async function waitToRetry(attempt, delays = PATIENT_RETRY_DELAYS_MS) {
  if (attempt >= delays.length) return false;
  await pause(delays[attempt]);
  return true;
}

/* Every answer from the server, to a request made without send() (htmx's): writes waiting for their next try go at
 * once, and, on a 2xx, work that gave up is sent again (onResendTime). */
export function heardFromServer(ok) {
  wakeWaitingWrites();
  if (ok) reachable();
}
