"""Moving the test database to a named migration and back, for tests of what a data migration does to rows stored
before it. Such tests need ``django_db(transaction=True)`` and must end with ``migrate_to_latest()`` (in a
``finally``) so the tests after them find the whole schema."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(target: list[tuple[str, str]]) -> Any:
    """Migrate forwards or backwards to ``target`` ([(app, migration name)]) and return the app registry of that
    state, whose ``get_model`` gives the historical models to write old rows with."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def migrate_to_latest() -> None:
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
