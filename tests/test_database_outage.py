"""A full disk or a database that cannot be reached answers 503 with words for it, not a 500 (config/database_busy.py):
JSON under /api/, the app's page elsewhere, in DEBUG too. A full disk says to tell the operator (no Retry-After:
trying again soon will not help); a database not reachable says to try again shortly (Retry-After).

A full disk is raised by a test double (SQLite's own error, "database or disk is full", which a test cannot make the
disk give); the database not reachable is the real thing on PostgreSQL: the app's connection pointed at a port where
nothing listens, as after the server stopped (psycopg's "connection failed ... Connection refused")."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from django.contrib.sessions.backends.db import SessionStore
from django.core.handlers.wsgi import WSGIHandler
from django.db import InterfaceError, OperationalError, connection
from django.test import Client, RequestFactory

from annotate.api.spans import SpanViewSet
from config.database_busy import (
    DISK_FULL_DETAIL,
    UNREACHABLE_DETAIL,
    DatabaseBusyMiddleware,
    database_trouble,
)
from tests.conftest import needs_postgres
from tests.loopback import free_port

REFUSED = ('connection failed: connection to server at "127.0.0.1", port 5432 failed: Connection refused\n'
           "\tIs the server running on that host and accepting TCP/IP connections?")


def middleware() -> DatabaseBusyMiddleware:
    return DatabaseBusyMiddleware(lambda request: None)  # type: ignore[arg-type, return-value]


@pytest.mark.parametrize(("error", "trouble"), [
    (OperationalError("database or disk is full"), "disk full"),
    (OperationalError('could not extend file "base/16384/2619": No space left on device'), "disk full"),
    (OperationalError(REFUSED), "not reachable"),
    (OperationalError("server closed the connection unexpectedly"), "not reachable"),
    (OperationalError("terminating connection due to administrator command"), "not reachable"),
    (InterfaceError("connection already closed"), "not reachable"),
    (OperationalError("database is locked"), "busy"),
    (OperationalError("no such table: annotate_sample"), None),
    (RuntimeError("database or disk is full"), None),
])
def test_which_database_errors_are_troubles(error: Exception, trouble: str | None) -> None:
    assert database_trouble(error) == trouble


@pytest.mark.django_db
def test_a_full_disk_on_the_api_answers_503_saying_to_tell_the_operator_without_retry_after(
    caplog: pytest.LogCaptureFixture,
) -> None:
    response = middleware().process_exception(RequestFactory().post("/api/spans/"),
                                              OperationalError("database or disk is full"))
    assert response is not None
    assert (response.status_code, response.headers.get("Retry-After")) == (503, None)
    assert json.loads(response.content) == {"detail": DISK_FULL_DETAIL}
    assert DISK_FULL_DETAIL == "The server's disk is full: nothing was saved; tell the operator."


@pytest.mark.django_db
def test_a_database_not_reachable_answers_503_to_try_again_shortly_with_retry_after() -> None:
    request = RequestFactory().post("/api/spans/")
    response = middleware().process_exception(request, OperationalError(REFUSED))
    assert response is not None
    assert (response.status_code, response.headers.get("Retry-After")) == (503, "10")
    assert json.loads(response.content) == {"detail": UNREACHABLE_DETAIL}
    assert UNREACHABLE_DETAIL.startswith("The database is not reachable: nothing was saved; try again shortly")


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [False, True])
def test_a_span_saved_on_a_full_disk_answers_503_json_and_the_page_503_html(
    alice: Any, settings: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, debug: bool,
) -> None:
    settings.DEBUG = debug

    def full(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("database or disk is full")

    client = Client(raise_request_exception=False)
    client.force_login(alice)
    # SQLite's error as the view's first database call raises it (the span's save on a full disk).
    monkeypatch.setattr(SpanViewSet, "create", full)
    with caplog.at_level(logging.WARNING):
        answer = client.post("/api/spans/", json.dumps({"sample": 1, "round": 1, "start": 0, "end": 1,
                                                        "labels": ["Questionable"]}), content_type="application/json")
    assert (answer.status_code, answer.headers.get("Retry-After")) == (503, None), answer.content[:300]
    assert answer.json() == {"detail": DISK_FULL_DETAIL}
    assert "database disk full: POST /api/spans/ answered 503 (database or disk is full)" in caplog.text
    assert "Internal Server Error" not in caplog.text

    monkeypatch.setattr(SessionStore, "save", full)
    settings.SESSION_SAVE_EVERY_REQUEST = True
    page = client.get("/")
    html = page.content.decode()
    assert page.status_code == 503 and page.headers.get("Retry-After") is None
    assert "<title>The server&#x27;s disk is full · FaithLab</title>" in html or \
        "<title>The server's disk is full · FaithLab</title>" in html, html[:500]
    assert "your session" in html and "tell the operator" in html and "Traceback" not in html


@needs_postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("debug", [False, True])
def test_postgresql_not_reachable_answers_503_with_retry_after_then_the_api_works_again(
    alice: Any, settings: Any, caplog: pytest.LogCaptureFixture, debug: bool,
) -> None:
    from annotate.services.tokens import create_api_token

    settings.DEBUG = debug
    token = create_api_token(alice, "test")[1]
    application = WSGIHandler()

    def post(path: str) -> tuple[str, dict[str, str], bytes]:
        statuses: list[tuple[str, dict[str, str]]] = []
        environ = RequestFactory().post(path, "{}", content_type="application/json",
                                        HTTP_AUTHORIZATION=f"Token {token}").environ
        response = application(environ, lambda status, headers, exc_info=None: statuses.append(
            (status, dict(headers))))
        body = b"".join(response)
        response.close()
        return statuses[0][0], statuses[0][1], body

    port = connection.settings_dict["PORT"]
    connection.close()
    connection.settings_dict["PORT"] = str(free_port())  # the server stopped: nothing listens there
    try:
        with caplog.at_level(logging.WARNING):
            status, headers, body = post("/api/spans/")
    finally:
        connection.close()
        connection.settings_dict["PORT"] = port
    assert status.startswith("503"), body[:500]
    assert headers.get("Retry-After") == "10"
    assert json.loads(body) == {"detail": UNREACHABLE_DETAIL}
    assert "database not reachable: POST /api/spans/ answered 503 (connection failed:" in caplog.text
    assert "Internal Server Error" not in caplog.text
    status, headers, body = post("/api/spans/")  # back: a 400 for the empty span, not a 503
    assert status.startswith("400"), body[:500]
