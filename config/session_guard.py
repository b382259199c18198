"""A page's writes after its login session changed: refused with a reason the page can show, never misfiled.

Two cases a person labeling for hours meets:

- **Logged out** (the session expired, or they logged out in another tab): an htmx
  request to a login-only view used to follow the redirect and swap the whole login
  page into the work area, destroying what the person was writing. Here an htmx
  request whose answer is a redirect to the login page gets a 401 instead (htmx swaps
  nothing on a 4xx), with ``X-FaithLab-Session: logged_out``. The JSON API already
  answers 401.
- **Someone else logged in** in another tab of the same browser: the session cookie
  is now theirs, so a write from a page opened as bob would be saved as carol. Pages
  send ``X-FaithLab-User`` (the username they were rendered for, percent-encoded so
  any name fits in a header: static/js/session.js and static/annotate/http.js); when it is not the session's user the write is
  refused with 403, ``X-FaithLab-Session: other_user`` and a message saying whom the
  page and the browser belong to; the same for a page's own reads (a pairs page
  asking for "my next item" would otherwise be served the other user's). Requests
  without the header (plain page loads, scripts, API tokens) are not affected.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import resolve_url

USER_HEADER = "X-FaithLab-User"
STATE_HEADER = "X-FaithLab-Session"
LOGGED_OUT = "logged_out"
OTHER_USER = "other_user"


def logged_out_message() -> str:
    return ("You are logged out (the session ended). Log in again in another tab, then try again here: "
            "what you have not saved is still on this page.")


def other_user_message(page_user: str, session_user: str) -> str:
    return (f"This page was opened as {page_user}, but this browser is now logged in as {session_user} (another "
            f"tab logged in). Nothing was saved. Log in as {page_user} again to save this page's work, or reload "
            f"to work as {session_user}.")


def _wants_json(request: HttpRequest) -> bool:
    return request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", "")


def _refusal(request: HttpRequest, status: int, state: str, message: str) -> HttpResponse:
    if _wants_json(request):
        response: HttpResponse = JsonResponse({"detail": message, "code": state}, status=status)
    else:
        response = HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    response[STATE_HEADER] = state
    return response


class SessionGuardMiddleware:
    """Refuses a page's write made as another user than the page's, and answers htmx with 401 when logged out."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        page_user = unquote(request.headers.get(USER_HEADER, ""))
        user = getattr(request, "user", None)
        # Reads too: a page opened as bob asking for "my next item" must not be served carol's (a serve records).
        if page_user and user is not None and user.is_authenticated and user.get_username() != page_user:
            return _refusal(request, 403, OTHER_USER, other_user_message(page_user, user.get_username()))
        response = self.get_response(request)
        if request.headers.get("HX-Request") == "true" and response.status_code in (301, 302, 303):
            if urlsplit(response.get("Location", "")).path == resolve_url(settings.LOGIN_URL):
                return _refusal(request, 401, LOGGED_OUT, logged_out_message())
        if response.status_code == 401 and STATE_HEADER not in response:
            response[STATE_HEADER] = LOGGED_OUT
        return response
