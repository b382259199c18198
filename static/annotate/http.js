/* Talking to the JSON API: CSRF, DRF error messages, and writes retried on network and 5xx errors.
 * Shared by every page: it reads nothing of a page's own state. */

const RETRY_DELAYS_MS = [500, 1000, 2000, 4000];
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/* The page's save status learns here when a write starts (+1) and stops (-1) waiting for a retry. */
let retryListener = () => {};
export function onRetrying(listener) {
  retryListener = listener;
}

function csrfToken() {
  try {
    const headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}");
    if (headers["x-csrftoken"]) return headers["x-csrftoken"];
  } catch (error) {
    /* fall back to the cookie */
  }
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return match ? decodeURIComponent(match[1]) : "";
}

export function jsonHeaders() {
  return { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() };
}

/* A 4xx answer: retrying would not help. */
export class ClientError extends Error {}

/* DRF errors look like {"detail": "..."} or {"field": ["message"]}: keep the field name. */
export function errorMessage(data, statusCode) {
  if (!data || typeof data !== "object") return `the server answered ${statusCode}`;
  if (typeof data.detail === "string") return data.detail;
  const parts = [];
  for (const [field, value] of Object.entries(data)) {
    const text = Array.isArray(value) ? value.join(" ") : typeof value === "object" ? JSON.stringify(value) : String(value);
    parts.push(field === "non_field_errors" ? text : `${field}: ${text}`);
  }
  return parts.join("; ") || `the server answered ${statusCode}`;
}

/* One write with automatic retries for network errors and 5xx answers. */
export async function send(method, url, body) {
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
        return { status: response.status, ok: response.ok, data };
      }
      if (attempt >= RETRY_DELAYS_MS.length) {
        throw new Error(response ? `server error ${response.status}` : "network error");
      }
      if (!retrying) {
        retrying = true;
        retryListener(1);
      }
      await pause(RETRY_DELAYS_MS[attempt]);
    }
  } finally {
    if (retrying) retryListener(-1);
  }
}
