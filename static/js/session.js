/* What every page sends and shows about its login session (config/session_guard.py has the server's side).
 *
 * Sent: the CSRF token read from the cookie at each request, not the copy printed into the page when it loaded
 * (logging in again, in any tab, gives a new token, and the old copy would be refused for ever), and the user the
 * page was opened for (X-FaithLab-User), so that a write made after someone else logged in, in another tab, is
 * refused instead of being saved under their name.
 *
 * Shown: one banner when a write finds the session ended (401) or taken over (403 other_user), from htmx requests
 * here and from the pages' own fetch calls through the "faithlab:session" event (static/annotate/http.js). The
 * banner says what to do; the page keeps what was not saved. */

(() => {
  "use strict";

  const STATE_HEADER = "X-FaithLab-Session";

  function cookieToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function show(state, message) {
    const banner = document.querySelector("[data-role=session-banner]");
    if (!banner) return;
    banner.replaceChildren();
    const text = document.createElement("span");
    text.textContent = message;
    banner.append(text, " ");
    const link = document.createElement("a");
    if (state === "other_user") {
      link.href = window.location.href;
      link.textContent = "Reload";
      link.target = "_self";
    } else {
      link.href = "/accounts/login/";
      link.textContent = "Log in (new tab)";
      link.target = "_blank";
      link.rel = "noopener";
    }
    banner.append(link);
    banner.dataset.state = state;
    banner.hidden = false;
  }

  function hide() {
    const banner = document.querySelector("[data-role=session-banner]");
    if (banner) banner.hidden = true;
  }

  document.addEventListener("htmx:configRequest", (event) => {
    const token = cookieToken();
    if (token) event.detail.headers["x-csrftoken"] = token; // the key hx-headers uses, so one value is sent
    // A form's own token ({% csrf_token %}) was printed with it, and Django reads it before the header.
    const parameters = event.detail.parameters;
    if (token && parameters && parameters.csrfmiddlewaretoken !== undefined) parameters.csrfmiddlewaretoken = token;
    const user = document.body.dataset.user;
    if (user) event.detail.headers["X-FaithLab-User"] = encodeURIComponent(user);
  });

  document.addEventListener("htmx:afterRequest", (event) => {
    const xhr = event.detail.xhr;
    if (!xhr) return;
    const state = xhr.getResponseHeader(STATE_HEADER);
    if (state && (xhr.status === 401 || xhr.status === 403)) show(state, xhr.responseText || "Not saved.");
    else if (event.detail.successful && event.detail.requestConfig && event.detail.requestConfig.verb !== "get") hide();
  });

  document.addEventListener("faithlab:session", (event) => {
    if (event.detail && event.detail.state) show(event.detail.state, event.detail.message);
    else hide();
  });
})();
