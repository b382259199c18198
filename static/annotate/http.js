/* Talking to the JSON API: CSRF, DRF error messages, and writes retried on network and 5xx errors.
 * Shared by every page: it reads nothing of a page's own state. */

import {
  PATIENT_RETRY_DELAYS_MS,
  STALLED_RETRY_MS,
  heardFromServer,
  onReachable,
  onResendTime,
  pause,
  reachable,
  wakeWaitingWrites,
  waitToRetry,
} from "../js/reachable.js";

/* The shared moments and waits (static/js/reachable.js), offered here too for the span and pairs pages' modules. */
export { PATIENT_RETRY_DELAYS_MS, STALLED_RETRY_MS, heardFromServer, onReachable, onResendTime, waitToRetry };

const RETRY_DELAYS_MS = [500, 1000, 2000, 4000];
/* The page's save status learns here when a write starts (+1) and stops (-1) waiting for a retry. */
let retryListener = () => {};
export function onRetrying(listener) {
  retryListener = listener;
}

/* The cookie's token first: logging in again (in any tab) gives a new one, and the copy printed into the page at
 * load would then be refused for ever. The printed copy is the fallback for a browser that hides the cookie. */
function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  if (match) return decodeURIComponent(match[1]);
  try {
    const headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}");
    return headers["x-csrftoken"] || "";
  } catch (error) {
    return "";
  }
}

/* X-FaithLab-User: the user this page was opened for; the server refuses a write when another user has logged in
 * since, in another tab (config/session_guard.py), so that nothing is saved under the wrong name. */
export function jsonHeaders() {
  const headers = { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() };
  const user = document.body.dataset.user;
  if (user) headers["X-FaithLab-User"] = encodeURIComponent(user);
  return headers;
}

/* Tell the page's session banner (static/js/session.js) what an answer says about the login session. */
const LOGGED_OUT = "You are logged out (the session ended). Log in again in another tab, then press Retry here: " +
  "what you have not saved is still on this page.";

function reportSession(method, response, data) {
  const state = response.headers.get("X-FaithLab-Session");
  if (response.status === 401) {
    document.dispatchEvent(new CustomEvent("faithlab:session", { detail: { state: "logged_out", message: LOGGED_OUT } }));
  } else if (response.status === 403 && state === "other_user") {
    const message = data && typeof data.detail === "string" ? data.detail : "Another user has logged in.";
    document.dispatchEvent(new CustomEvent("faithlab:session", { detail: { state, message } }));
  } else if (response.ok && method !== "GET") {
    document.dispatchEvent(new CustomEvent("faithlab:session", { detail: {} }));
  }
}

/* What every answer below 500 tells the page, also for requests made without send() (the similarity shading): the
 * login session's state (the banner), and that the server answers, so writes waiting for a retry go now, and, on a
 * 2xx, saves that gave up are tried again. */
export function noteAnswer(method, response, data) {
  reportSession(method, response, data);
  wakeWaitingWrites();
  if (response.ok) reachable();
}

/* A 4xx answer: retrying would not help. */
export class ClientError extends Error {}

/* DRF errors look like {"detail": "..."} or {"field": ["message"]}: keep the field name. */
export function errorMessage(data, statusCode) {
  if (statusCode === 401) return "you are logged out: log in again in another tab, then Retry";
  if (!data || typeof data !== "object") return `the server answered ${statusCode}`;
  if (typeof data.detail === "string") return data.detail;
  const parts = [];
  for (const [field, value] of Object.entries(data)) {
    const text = Array.isArray(value) ? value.join(" ") : typeof value === "object" ? JSON.stringify(value) : String(value);
    parts.push(field === "non_field_errors" ? text : `${field}: ${text}`);
  }
  return parts.join("; ") || `the server answered ${statusCode}`;
}

/* Whether an answer says the login session ended (401) or another user logged in since (403 other_user): such a
 * write can go through once the person logs in again (in another tab), unlike other 4xx answers. */
export const isSessionRefusal = (status, data) =>
  status === 401 || (status === 403 && Boolean(data && data.code === "other_user"));

/* One write with automatic retries for network errors and 5xx answers; options.delays (milliseconds between
 * tries) replaces the default 7.5 s of tries, e.g. with PATIENT_RETRY_DELAYS_MS. */
export async function send(method, url, body, options) {
  const delays = (options && options.delays) || RETRY_DELAYS_MS;
  let retrying = false;
  try {
    for (let attempt = 0; ; attempt++) {
      let response = null;
      try {
        response = await fetch(url, {
          method,
          headers: jsonHeaders(),
          credentials: "same-origin",
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      } catch (error) {
        response = null;
      }
      if (response && response.status < 500) {
        let data = null;
        if (response.status !== 204) {
          try {
            data = await response.json();
          } catch (error) {
            data = null;
          }
        }
        noteAnswer(method, response, data);
        return { status: response.status, ok: response.ok, data };
      }
      if (attempt >= delays.length) {
        // A 503 says why in its detail (config/database_busy.py: the database busy, the disk full, the database
        // not reachable): the page shows those words rather than a bare status.
        let detail = "";
        try {
          const data = response ? await response.json() : null;
          if (data && typeof data.detail === "string") detail = data.detail;
        } catch (error) {
          detail = "";
        }
        throw new Error(response ? `server error ${response.status}${detail ? ": " + detail : ""}` : "network error");
      }
      if (!retrying) {
        retrying = true;
        retryListener(1);
      }
      await pause(delays[attempt]);
    }
  } finally {
    if (retrying) retryListener(-1);
  }
}
