"""Counting the SQL a piece of code runs, for tests that a page's queries do not grow with the data."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection


@contextmanager
def counted() -> Iterator[list[str]]:
    """Every statement run inside, as the database sees it (a test Client request included)."""
    statements: list[str] = []

    def record(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        yield statements
