"""A PostgreSQL restart does not turn the next requests into 500s: a kept connection is checked before it is reused.

CONN_MAX_AGE keeps each web thread's connection between requests. When the server drops it (a restart, a failover,
pg_terminate_backend), the next request on that thread used to fail with OperationalError ("terminating connection
due to administrator command"); with CONN_HEALTH_CHECKS Django tests the connection at the request's first query and
opens a new one.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.db import connection
from django.test import Client, RequestFactory

from tests.conftest import needs_postgres


def answer(application: WSGIHandler, path: str, cookie: str) -> str:
    """The status of one request through the WSGI handler, which (unlike the test client) sends request_started and
    request_finished, where Django decides whether a kept connection is reused."""
    statuses: list[str] = []
    environ = RequestFactory().get(path, HTTP_COOKIE=f"{settings.SESSION_COOKIE_NAME}={cookie}").environ
    response = application(environ, lambda status, headers, exc_info=None: statuses.append(status))
    response.close()
    return statuses[0]


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_a_request_after_the_server_dropped_the_connection_still_answers(alice: Any) -> None:
    client = Client()
    client.force_login(alice)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    application = WSGIHandler()
    assert answer(application, "/", cookie).startswith("200")
    assert connection.connection is not None  # kept for the next request (CONN_MAX_AGE)
    dropped = connection.connection.info.backend_pid
    with psycopg.connect(connection.connection.info.dsn, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [dropped])
    assert answer(application, "/", cookie).startswith("200")
    assert connection.connection.info.backend_pid != dropped
