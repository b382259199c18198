"""The test suite's own flush survives a deadlock with a request still in the live server (tests/conftest.py).

A browser test can end while the live server still runs a request that holds a row lock; the flush's TRUNCATE and
that request then wait on each other, and PostgreSQL aborts the one that waited first, the flush. Here a second
connection plays the request: it locks a row of the table the TRUNCATE reaches last, then asks for a row of the
table it takes first. The flush must still empty the database.
"""

from __future__ import annotations

import re
import threading
import time

import pytest
from django.core.management.color import no_style
from django.db import connection, connections
from django.test import TransactionTestCase

from tests.conftest import needs_postgres


def _truncated_tables() -> list[str]:
    """The tables in the order the flush's TRUNCATE names them (and PostgreSQL locks them)."""
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    statement = " ".join(connection.ops.sql_flush(no_style(), tables))
    return re.findall(r'"([a-z_0-9]+)"', statement.split(";")[0])


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_the_flush_is_tried_again_when_postgresql_aborts_it_in_a_deadlock() -> None:
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user("left-behind", password="x")
    tables = _truncated_tables()
    first, last = tables[0], tables[-1]
    holding = threading.Event()
    outcome: dict[str, object] = {}

    def request_in_the_live_server() -> None:
        other = connections["default"]
        try:
            with other.cursor() as cursor:
                cursor.execute("BEGIN")
                cursor.execute(f'LOCK TABLE "{last}" IN ROW SHARE MODE')
                holding.set()
                time.sleep(0.5)  # the flush's TRUNCATE now holds `first` and waits for `last`
                cursor.execute(f'LOCK TABLE "{first}" IN ROW SHARE MODE')
                cursor.execute("COMMIT")
                outcome["request"] = "committed"
        except Exception as exc:  # the request may be the victim instead: then the flush goes on at once
            outcome["request"] = repr(exc)
        finally:
            other.close()

    thread = threading.Thread(target=request_in_the_live_server)
    thread.start()
    assert holding.wait(5)
    flush_only = type("FlushOnly", (TransactionTestCase,), {"databases": {"default"}, "runTest": lambda self: None})
    flush_only()._fixture_teardown()
    thread.join(10)

    assert not thread.is_alive()
    assert not get_user_model().objects.filter(username="left-behind").exists()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction' AND datname = "
                       "current_database()")
        assert cursor.fetchone()[0] == 0
