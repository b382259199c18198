"""A write that found the database busy answers 503 "try again", not a 500.

SQLite (the embedded default) lets one connection write at a time: another
writer waits for the lock up to the connection's timeout (config/settings.py)
and then gets ``OperationalError: database is locked``. Nothing is wrong with
the request, and nothing was saved (its transaction was rolled back), so
:class:`DatabaseBusyMiddleware` answers every view's such error in one place:
503 with ``Retry-After``, as JSON ``{"detail": ...}`` under /api/ (where
clients read JSON) and as templates/503.html elsewhere, in DEBUG too (the
embedded run's mode, where Django would show its technical 500). It is logged
as one warning line, without a traceback. Imports, the long writer, keep their
transaction short (annotate.services.ingest.prepare); a long write by anything
else can still cause this.

process_exception sees only what views raise: Django turns an exception raised
in a middleware into a 500 at that middleware's own edge, before any other
middleware sees it. The one middleware that writes is the session's (it saves
a changed session after the view), so :class:`SessionMiddleware` stands in for
Django's and answers its busy save the same way, with a message that does not
claim the view changed nothing (its writes were committed before the save).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.contrib.sessions import middleware as sessions
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import render

log = logging.getLogger(__name__)

# SQLite's words for SQLITE_BUSY (another connection holds the lock) and SQLITE_LOCKED (this one does).
BUSY_MESSAGES = ("database is locked", "database table is locked")
RETRY_AFTER_SECONDS = 10
BUSY_DETAIL = (
    "The database is busy with a long write (such as a large import) and could not save this in time; nothing was "
    f"changed. Try again in {RETRY_AFTER_SECONDS} seconds."
)
SESSION_BUSY_DETAIL = (
    "The database is busy with a long write (such as a large import) and could not save your session (your sign-in "
    f"and page state) in time. Try again in {RETRY_AFTER_SECONDS} seconds; if you were saving something, check first "
    "whether it was saved."
)


def is_database_busy(error: BaseException) -> bool:
    """Whether ``error`` is the database refusing a write because another one holds its lock."""
    return isinstance(error, OperationalError) and any(words in str(error).lower() for words in BUSY_MESSAGES)


def database_busy_response(request: HttpRequest, detail: str = BUSY_DETAIL) -> HttpResponse:
    """503 with Retry-After: JSON under /api/, the app's page elsewhere."""
    response: HttpResponse
    if request.path_info.startswith("/api/"):
        response = JsonResponse({"detail": detail}, status=503)
    else:
        response = render(request, "503.html", {"detail": detail}, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class DatabaseBusyMiddleware:
    """Answers a view's "database is locked" with a 503 to try again (see the module)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_database_busy(exception):
            return None
        log.warning("database busy: %s %s answered 503 (%s)", request.method, request.path, exception)
        return database_busy_response(request)


class SessionMiddleware(sessions.SessionMiddleware):
    """Django's session middleware, answering a busy session save with the 503 (see the module): in place of it in
    settings.MIDDLEWARE, as only this middleware's own code can catch what it raises."""

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        try:
            return super().process_response(request, response)
        except OperationalError as error:
            if not is_database_busy(error):
                raise
            log.warning("database busy: %s %s answered 503, saving the session (%s)", request.method, request.path,
                        error)
            return database_busy_response(request, SESSION_BUSY_DETAIL)
