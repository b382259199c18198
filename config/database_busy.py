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
"""

from __future__ import annotations

import logging
from collections.abc import Callable

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


def is_database_busy(error: BaseException) -> bool:
    """Whether ``error`` is the database refusing a write because another one holds its lock."""
    return isinstance(error, OperationalError) and any(words in str(error).lower() for words in BUSY_MESSAGES)


def database_busy_response(request: HttpRequest) -> HttpResponse:
    """503 with Retry-After: JSON under /api/, the app's page elsewhere."""
    response: HttpResponse
    if request.path_info.startswith("/api/"):
        response = JsonResponse({"detail": BUSY_DETAIL}, status=503)
    else:
        response = render(request, "503.html", {"detail": BUSY_DETAIL}, status=503)
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
