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

Two more database troubles are answered the same way (same places, same shapes), since neither is a bug in the
request and nothing was saved: a full disk (SQLite's "database or disk is full", PostgreSQL's "No space left on
device") is a 503 without Retry-After that says to tell the operator (trying again soon will not help), and a
database that cannot be reached (PostgreSQL stopped or restarting: connection refused, failed or closed) is a 503
with Retry-After to try again shortly. :func:`database_trouble` tells them apart; every other database error stays
a 500 with its traceback in the log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.contrib.sessions import middleware as sessions
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import render
from django.utils.html import format_html

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


# SQLite's SQLITE_FULL, PostgreSQL's ENOSPC ("could not extend file ...: No space left on device").
DISK_FULL_MESSAGES = ("database or disk is full", "disk is full", "no space left on device", "disk quota exceeded")
DISK_FULL_DETAIL = "The server's disk is full: nothing was saved; tell the operator."
# psycopg's words when the server is stopped, restarting or dropped the connection (InterfaceError: the connection
# the request held is closed).
UNREACHABLE_MESSAGES = (
    "connection refused", "connection failed", "could not connect", "connection is closed", "connection already closed",
    "server closed the connection", "terminating connection", "connection is lost", "server has gone away",
    "the database system is starting up", "the database system is shutting down", "no connection to the server",
)
UNREACHABLE_DETAIL = (
    f"The database is not reachable: nothing was saved; try again shortly (in {RETRY_AFTER_SECONDS} seconds)."
)

BARE_PAGE = (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{title} · FaithLab</title></head>\n'
    '<body><main><h1>{title}</h1><p class="error" role="alert">{detail}</p></main></body></html>\n'
)

BUSY, DISK_FULL, UNREACHABLE = "busy", "disk full", "not reachable"
# What each trouble answers: the page's title, the detail, and whether trying again soon can help (Retry-After).
ANSWERS = {
    BUSY: ("Busy, try again", BUSY_DETAIL, True),
    DISK_FULL: ("The server's disk is full", DISK_FULL_DETAIL, False),
    UNREACHABLE: ("The database is not reachable", UNREACHABLE_DETAIL, True),
}


# A session save after the view: the view's own writes were committed already.
SESSION_DETAILS = {
    DISK_FULL: "The server's disk is full: your session (your sign-in and page state) could not be saved; tell the "
               "operator. If you were saving something, check whether it was saved.",
    UNREACHABLE: "The database is not reachable: your session (your sign-in and page state) could not be saved; try "
                 "again shortly. If you were saving something, check first whether it was saved.",
}


def database_trouble(error: BaseException) -> str | None:
    """BUSY, DISK_FULL or UNREACHABLE where ``error`` is one of the database troubles answered with a 503, else
    None (a bug, a missing table: a 500)."""
    if not isinstance(error, (OperationalError, InterfaceError)):
        return None
    words = str(error).lower()
    if isinstance(error, OperationalError) and any(busy in words for busy in BUSY_MESSAGES):
        return BUSY
    if any(full in words for full in DISK_FULL_MESSAGES):
        return DISK_FULL
    if any(away in words for away in UNREACHABLE_MESSAGES):  # an InterfaceError too: "cursor already closed" is a bug
        return UNREACHABLE
    return None


def is_database_busy(error: BaseException) -> bool:
    """Whether ``error`` is the database refusing a write because another one holds its lock."""
    return database_trouble(error) == BUSY


def database_busy_response(request: HttpRequest, detail: str = BUSY_DETAIL, trouble: str = BUSY) -> HttpResponse:
    """503, with Retry-After where trying again soon can help: JSON under /api/, the app's page elsewhere."""
    title, _, retry = ANSWERS[trouble]
    response: HttpResponse
    if request.path_info.startswith("/api/"):
        response = JsonResponse({"detail": detail}, status=503)
    else:
        try:
            response = render(request, "503.html", {"detail": detail, "title": title}, status=503)
        except (OperationalError, InterfaceError) as error:
            # The page's frame reads the signed-in user and messages from the database, which may be the trouble
            # (not reachable): the same words on a bare page.
            if database_trouble(error) is None:
                raise
            response = HttpResponse(format_html(BARE_PAGE, title=title, detail=detail), status=503)
    if retry:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


class DatabaseBusyMiddleware:
    """Answers a view's "database is locked" with a 503 to try again (see the module)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        trouble = database_trouble(exception)
        if trouble is None:
            return None
        log.warning("database %s: %s %s answered 503 (%s)", trouble, request.method, request.path,
                    _first_line(exception))
        return database_busy_response(request, ANSWERS[trouble][1], trouble)


class SessionMiddleware(sessions.SessionMiddleware):
    """Django's session middleware, answering a busy session save with the 503 (see the module): in place of it in
    settings.MIDDLEWARE, as only this middleware's own code can catch what it raises."""

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        try:
            return super().process_response(request, response)
        except (OperationalError, InterfaceError) as error:
            trouble = database_trouble(error)
            if trouble is None:
                raise
            log.warning("database %s: %s %s answered 503, saving the session (%s)", trouble, request.method,
                        request.path, _first_line(error))
            detail = SESSION_BUSY_DETAIL if trouble == BUSY else SESSION_DETAILS[trouble]
            return database_busy_response(request, detail, trouble)
