"""The one shape of every 400 the API answers: DRF's, an object of field -> [messages].

Clients (the annotation page, scripts) read a refusal the same way on every
endpoint: ``{"round": ["project 'demo' has no round 9 ..."]}``, with
``non_field_errors`` when no single field is at fault. Views refuse an input
with :func:`field_error`. DRF also answers 400s that no view of ours raises: a
body that is not JSON, a bad item of a list field (``{"labels": {"0": [...]}}``)
or a serializer error raised as a bare string or list. :func:`api_exception_handler`,
the ``EXCEPTION_HANDLER`` in settings, puts those in the same shape, naming the
item in its message (``"labels[0]: This field may not be null."``).

A write to a frozen round is refused the same way everywhere too: 409 with
``frozen`` true (:func:`frozen_round`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.urls import Resolver404, resolve
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import server_error as server_error_page
from rest_framework import status
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView, exception_handler


def field_error(field: str | None, message: str, *more: str) -> ValidationError:
    """A 400 naming the field at fault (None: no single field, ``non_field_errors``) with its messages."""
    return ValidationError({field or api_settings.NON_FIELD_ERRORS_KEY: [message, *more]})


def frozen_round(frozen: Exception, *, round_sent: int | None = None, round_left_out: bool = False) -> Response:
    """A write to a frozen round: 409 with the reason, which the page shows as it is.

    A write that chose its round by the ``round`` field (``round_sent``) to a round frozen because a later one
    opened also gets ``resend_with``, the field and the value to send instead (``{"round": 2}``). When the
    request left ``round`` out and it took its default, the message says so too: the caller never chose round 1,
    so "make changes in round 2" alone would not tell them which field to change. The page always sends its
    round, and shows the reason as it is.
    """
    body: dict[str, Any] = {"detail": str(frozen), "frozen": True}
    later = getattr(frozen, "later_round", None)
    if round_sent is not None and later is not None:
        body["resend_with"] = {"round": later}
        if round_left_out:
            body["detail"] += (
                f' Nothing was saved: this request left out "round", so it went to round {round_sent} (the '
                f'default); send "round": {later} to save it in round {later}.'
            )
    return Response(body, status=status.HTTP_409_CONFLICT)


def _is_message_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(message, str) for message in value)


def _item_path(path: str, key: Any) -> str:
    """``labels`` and 0 give ``labels[0]``; a nested serializer's field gives ``source.start``."""
    key = str(key)
    if key.isdigit():
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _messages(detail: Any, path: str) -> list[str]:
    """Every message under ``detail``, each prefixed with where it applies inside the field (if anywhere)."""
    prefix = f"{path}: " if path else ""
    if isinstance(detail, str):
        return [f"{prefix}{detail}"]
    if isinstance(detail, Mapping):
        return [message for key, value in detail.items() for message in _messages(value, _item_path(path, key))]
    if _is_message_list(detail):
        return [f"{prefix}{message}" for message in detail]
    # A list of nested errors (many=True): one entry per item, empty for the items that were fine.
    return [message for index, value in enumerate(detail or []) if value
            for message in _messages(value, _item_path(path, index))]


def as_field_errors(detail: Any) -> dict[str, list[str]]:
    """Any ValidationError detail in the field -> [messages] shape (already in it: unchanged)."""
    if not isinstance(detail, Mapping):
        return {api_settings.NON_FIELD_ERRORS_KEY: _messages(detail, "")}
    errors: dict[str, list[str]] = {}
    for field, value in detail.items():
        # The field's own messages stand as they are; those of its items or nested fields say which one.
        plain = isinstance(value, str) or _is_message_list(value)
        messages = _messages(value, "" if plain else str(field))
        if messages:
            errors[str(field)] = messages
    return errors


def _in_shape(detail: Any) -> bool:
    return isinstance(detail, Mapping) and bool(detail) and all(_is_message_list(value) for value in detail.values())


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, with every 400 in the field -> [messages] shape; other answers are DRF's own."""
    if isinstance(exc, ParseError):
        exc = field_error(None, str(exc.detail))
    elif isinstance(exc, ValidationError) and not _in_shape(exc.detail):
        exc = ValidationError(as_field_errors(exc.detail))
    return exception_handler(exc, context)


# --------------------------------------------------------------------- 401 or 404 for any other URL under /api/

# The collections under /api/ whose next path segment names an object, and the form that segment takes there
# (the URL patterns' own): a segment of another form names no object of theirs.
_ID = r"[0-9]{1,18}"
_KEYED_COLLECTIONS: dict[str, tuple[str, str, str]] = {
    "projects": ("project", r"[-a-zA-Z0-9_]+", "slugs are ASCII letters, digits, - and _"),
    "samples": ("sample", _ID, "sample ids are whole numbers"),
    "spans": ("span", _ID, "span ids are whole numbers"),
    "pairs": ("pair item", _ID, "pair item ids are whole numbers"),
    "judge-runs": ("judge run", _ID, "judge run ids are whole numbers"),
    "audit-items": ("audit item", _ID, "audit item ids are whole numbers"),
}


def _not_found_detail(path_info: str, path: str) -> str:
    """What was not found: an object whose key cannot exist, else the address itself."""
    segments = [segment for segment in path_info.removeprefix("/api/").split("/") if segment]
    if len(segments) >= 2 and segments[0] in _KEYED_COLLECTIONS:
        noun, form, rule = _KEYED_COLLECTIONS[segments[0]]
        if not re.fullmatch(form, segments[1]):
            return f"No {noun} {segments[1]!r} ({rule}); nothing at {path}"
    return f"No API endpoint at {path}: the endpoints and their paths are listed in the schema at /api/schema/"


class _SessionWithoutCsrf(SessionAuthentication):
    """The signed-in session without DRF's CSRF check, for the catch-all alone: it changes nothing, so a session's
    POST without its CSRF token learns that the address is wrong (404) rather than that its token is missing."""

    def enforce_csrf(self, request: Request) -> None:
        return None


class UnknownApiAddress(APIView):
    """An address under /api/ that no endpoint serves, asked by a caller DRF has authenticated as every endpoint does.

    Without valid credentials the caller gets DRF's own 401 (``WWW-Authenticate: Token``), the answer of every other
    endpoint: it learns that it must sign in, not which addresses exist. A signed-in caller gets the JSON 404
    naming the address. The authentication classes are the settings' own, in their order (the token's challenge
    first), with the session's CSRF check left out.
    """

    schema = None  # no endpoint: the schema lists none of the addresses it answers

    def get_authenticators(self) -> list[BaseAuthentication]:
        return [_SessionWithoutCsrf() if type(authenticator) is SessionAuthentication else authenticator
                for authenticator in super().get_authenticators()]

    def not_found(self, request: Request, *args: Any, slashed: str | None = None, **kwargs: Any) -> HttpResponse:
        """404 ``{"detail": ...}``; for an endpoint's address without its slash, where to send the request instead."""
        if slashed is not None:
            # A redirected POST would lose its body, and Django refuses it with a 500 in DEBUG: say what to send.
            return JsonResponse({"detail": f"API addresses end with a slash: send this to {slashed}"}, status=404)
        return JsonResponse({"detail": _not_found_detail(request.path_info, request.path)}, status=404)

    get = post = put = patch = delete = head = options = trace = not_found


_unknown_api_address = UnknownApiAddress.as_view()


@csrf_exempt  # it changes nothing: a POST from a session without its CSRF token gets the 404 too
def api_not_found(request: HttpRequest) -> HttpResponse:
    """Every URL under /api/ that no endpoint serves: 401 to a caller who is not signed in, as every endpoint answers,
    else 404 ``{"detail": ...}`` like the API's other 404s.

    Without it Django answered its HTML page, and with DEBUG on the technical one
    listing every URL pattern. It is the last API route (config/urls.py), so it
    answers in DEBUG too, where Django skips ``handler404``. An endpoint's address
    without its final slash is redirected for GET and HEAD before anything else,
    as Django's APPEND_SLASH does for every page (the endpoint then asks for
    credentials itself).
    """
    slashed = _slashed_endpoint(request.path_info)
    if slashed is not None and request.method in ("GET", "HEAD"):
        return HttpResponsePermanentRedirect(request.get_full_path().replace(request.path, request.path + "/", 1))
    return _unknown_api_address(request, slashed=slashed)


def _slashed_endpoint(path: str) -> str | None:
    """``path`` with its final slash when that is the address of an endpoint other than this catch-all, else None."""
    if path.endswith("/"):
        return None
    try:
        return path + "/" if resolve(path + "/").url_name != "api-not-found" else None
    except Resolver404:
        return None


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: under /api/ a JSON 500 ``{"detail": ...}`` as every other API error, else the app's page.

    Like Django's own view (templates/500.html) it needs no database and no user. In DEBUG Django shows its
    technical page instead and never calls this.
    """
    if request.path_info.startswith("/api/"):
        return JsonResponse(
            {"detail": "Server error: something went wrong on our side, and what you asked for was not done. "
                       "The error has been logged."},
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    return server_error_page(request)
