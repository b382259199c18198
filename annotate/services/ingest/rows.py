"""Rows an import prepares before its transaction opens, and inserts inside it with one statement per chunk.

``bulk_create`` turns every field of every row into its database value and
builds the INSERT while the transaction is open: about 0.4 ms a sample with
its span on the 2-core machines, so a 100,000-sample import held the
database's write lock (SQLite takes it at BEGIN) for a minute or more and
every other writer waited (docs/performance.md, section 3). Here each value is
converted by its field's own ``get_db_prep_save`` (what ``bulk_create`` calls),
before the transaction; inside it only the keys of rows written in the same
transaction (a new batch's id, a new passage's) are filled in and the rows
sent with ``executemany``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connections, models, router
from django.utils import timezone

CHUNK = 2000  # rows an executemany call sends; bounds the memory of one call, not the transaction


class PreparedInsert:
    """The INSERT of one model's rows: values prepared one row at a time, ``keys`` (foreign key ids known only
    inside the transaction) appended last when the rows are written.

    Fields an import does not give take their default, ``auto_now``/``auto_now_add`` fields the time this
    object was made, as ``bulk_create`` would give them.
    """

    def __init__(self, model: type[models.Model], keys: Sequence[str] = ()) -> None:
        self.model = model
        self.using = router.db_for_write(model)
        fields = [field for field in model._meta.concrete_fields if not field.primary_key]
        self.keys = [model._meta.get_field(name) for name in keys]
        self.fields = [field for field in fields if field not in self.keys]
        self.names = {field.name for field in self.fields}
        self.now = timezone.now()

    def prepare(self, **values: Any) -> tuple[Any, ...]:
        """One row's values (foreign keys as ids, under the field's name), the keys left out, as stored."""
        unknown = values.keys() - self.names
        if unknown:  # a programming error, not bad input: say which field
            raise TypeError(f"{self.model.__name__} has no field {sorted(unknown)[0]!r} to prepare")
        connection = connections[self.using]
        return tuple(field.get_db_prep_save(self._value(field, values), connection) for field in self.fields)

    def _value(self, field: models.Field, values: dict[str, Any]) -> Any:
        if field.name in values:
            return values[field.name]
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            return self.now
        return field.get_default()

    def insert(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """Write prepared rows, each followed by its keys' values (ids), in chunks of CHUNK."""
        connection = connections[self.using]
        quote = connection.ops.quote_name
        columns = ", ".join(quote(field.column) for field in [*self.fields, *self.keys])
        placeholders = ", ".join(["%s"] * (len(self.fields) + len(self.keys)))
        # Only the model's own table and column names go into the text, quoted; every value is a parameter.
        sql = f"INSERT INTO {quote(self.model._meta.db_table)} ({columns}) VALUES ({placeholders})"  # noqa: S608
        chunk: list[tuple[Any, ...]] = []
        with connection.cursor() as cursor:
            for row in rows:
                chunk.append(row)
                if len(chunk) == CHUNK:
                    cursor.executemany(sql, chunk)
                    chunk = []
            if chunk:
                cursor.executemany(sql, chunk)

    def insert_returning_ids(self, rows: Sequence[tuple[Any, ...]]) -> list[int]:
        """Write prepared rows (each followed by its keys' values) and return their new ids, in the rows' order.

        For rows whose children are written in the same transaction and have no other key to be found by:
        multi-row ``INSERT ... RETURNING``, the statement ``bulk_create`` sends on SQLite and PostgreSQL (and, as
        it does, taking the returned ids in the order of the rows), as many rows a statement as the database's
        limit on parameters allows.
        """
        connection = connections[self.using]
        if not connection.features.can_return_rows_from_bulk_insert:
            raise RuntimeError(f"database {connection.vendor} returns no ids from a bulk insert; an import needs them")
        quote = connection.ops.quote_name
        width = len(self.fields) + len(self.keys)
        columns = ", ".join(quote(field.column) for field in [*self.fields, *self.keys])
        row_sql = "(" + ", ".join(["%s"] * width) + ")"
        returning = quote(self.model._meta.pk.column)
        per_statement = max(1, min(CHUNK, _parameter_limit(connection) // width))
        ids: list[int] = []
        with connection.cursor() as cursor:
            for first in range(0, len(rows), per_statement):
                chunk = rows[first : first + per_statement]
                # Only the model's own table and column names go into the text, quoted; every value is a parameter.
                sql = (f"INSERT INTO {quote(self.model._meta.db_table)} ({columns}) "  # noqa: S608
                       f"VALUES {', '.join([row_sql] * len(chunk))} RETURNING {returning}")
                cursor.execute(sql, [value for row in chunk for value in row])
                ids.extend(row[0] for row in cursor.fetchall())
        if len(ids) != len(rows):
            raise RuntimeError(f"{self.model.__name__}: {len(rows)} rows inserted, {len(ids)} ids returned")
        return ids


def _parameter_limit(connection: Any) -> int:
    """Parameters one statement may carry: SQLite's own limit (Django assumes 999, the default before 3.32)."""
    if connection.vendor == "sqlite":
        import sqlite3

        connection.ensure_connection()
        return int(connection.connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))
    return int(connection.features.max_query_params or 65535)  # PostgreSQL's protocol: 65535 parameters
