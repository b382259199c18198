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
