"""Finding and repairing stored text the database should never have kept: NUL and lone surrogates (check_text).

Since annotate/storable.py, every import and API body refuses them; an install from before may still hold some.
On SQLite a lone surrogate could be kept inside a JSON column (json.dumps writes it as the ASCII escape
``\\ud800``) and NUL anywhere, and then every reader failed on the row: the exports, the sample's API, the results
page. A row written by other tools may even hold a surrogate as raw bytes (ED A0 80, not UTF-8), which the ORM
cannot load at all ("Could not decode to UTF-8 column"). So on SQLite each text and JSON column is read through
``CAST(column AS BLOB)`` and decoded here, keeping what strict UTF-8 would refuse. PostgreSQL refuses both
characters in text and jsonb, so there the columns are read plainly and found clean.

A repair replaces each such character with U+FFFD, one code point for one, so the code-point offsets stored
beside a text (spans, sentences, pair items) still point at the same characters. An object key whose repaired
name another key of the same object already has is not merged: that row is left as it is and reported.

Columns are discovered from the models' meta, so a new model of either app is checked without a change here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.db import connection, models, transaction
from django.db.models.functions import Cast

from annotate.storable import NUL, Unstorable, escaped, iter_unstorable, repair_unstorable

APPS = ("annotate", "judging")  # FaithLab's own models; Django's (users, sessions) are not ours to rewrite
CHUNK_SIZE = 2000  # rows fetched at a time: a big table is walked, never held in memory
# Text columns holding JSON written by json.dumps (ASCII escapes), so a lone surrogate there is six ASCII characters
# the database keeps: they are read as JSON. The figure cache keeps its JSON as text to keep its key order.
JSON_IN_TEXT = frozenset({"annotate.FigureSet.value"})


@dataclass(frozen=True)
class StoredText:
    """One stored string (a column's text, or a value or key inside a JSON column) holding NUL or a lone
    surrogate: the model, the row's primary key, the field and, inside JSON, where (storable's path)."""

    model: str  # "annotate.Sample"
    pk: Any
    field: str
    found: Unstorable

    def describe(self) -> str:
        """``annotate.Sample pk=4 field metadata, key 'k\\ud800': a lone surrogate (\\ud800)``."""
        character = self.found.character
        what = "a NUL character" if character == NUL else "a lone surrogate"
        return f"{self.where()}: {what} ({escaped(character)})"

    def where(self) -> str:
        where = f"{self.model} pk={self.pk} field {self.field}"
        if self.found.path:
            where += f", {'key' if self.found.in_key else 'at'} '{self.found.path}'"
        return where


@dataclass
class BadRow:
    """A row holding such text: what was found, the repaired value of each field concerned, and why the row must
    be left as it is (a key collision, JSON that cannot be read) when it must."""

    model: type[models.Model]
    pk: Any
    found: list[StoredText] = field(default_factory=list)
    repaired: dict[str, Any] = field(default_factory=dict)
    left_because: list[str] = field(default_factory=list)


@dataclass
class TextReport:
    """What a check or a repair saw: the strings found, the rows repaired and the rows left, and how much it read."""

    found: list[StoredText] = field(default_factory=list)
    left: list[str] = field(default_factory=list)  # why --fix leaves a row as it is, naming the row (one or more)
    left_rows: int = 0
    repaired_rows: int = 0
    models: int = 0
    columns: int = 0
    rows: int = 0

    @property
    def clean(self) -> bool:
        return not self.found and not self.left


def text_columns() -> list[tuple[type[models.Model], list[models.Field[Any, Any]]]]:
    """Every model of FaithLab's apps with its own text and JSON columns (CharField and its kin, TextField,
    JSONField); an inherited column is checked once, on the model whose table holds it."""
    found = []
    for app in APPS:
        for model in apps.get_app_config(app).get_models():
            if model._meta.proxy or not model._meta.managed:
                continue
            fields = [column for column in model._meta.local_concrete_fields
                      if isinstance(column, models.CharField | models.TextField | models.JSONField)]
            if fields:
                found.append((model, fields))
    return found


def check_stored_text(*, chunk_size: int = CHUNK_SIZE) -> TextReport:
    """Walk every text and JSON column and report each string holding NUL or a lone surrogate; changes nothing."""
    report = TextReport()
    for model, fields in text_columns():
        for row in _bad_rows(model, fields, chunk_size, report):
            report.found += row.found
            report.left += row.left_because
            report.left_rows += bool(row.left_because)
    return report


def repair_stored_text(*, chunk_size: int = CHUNK_SIZE) -> TextReport:
    """Replace each NUL and lone surrogate with U+FFFD, in one transaction; ``found`` lists what was replaced.

    A row with a key collision or unreadable JSON is left whole and named in ``left``. Idempotent: a second run
    finds nothing to replace. Each model's bad rows are written after its walk, so no table is written while a
    cursor still reads it.
    """
    report = TextReport()
    with transaction.atomic():
        for model, fields in text_columns():
            repairable = []
            for row in _bad_rows(model, fields, chunk_size, report):
                if row.left_because:
                    report.left += row.left_because
                    report.left_rows += 1
                else:
                    repairable.append(row)
            for row in repairable:
                model._base_manager.filter(pk=row.pk).update(**row.repaired)  # no save(): not an edit, no auto_now
                report.found += row.found
            report.repaired_rows += len(repairable)
    return report


def _bad_rows(
    model: type[models.Model], fields: list[models.Field[Any, Any]], chunk_size: int, report: TextReport
) -> Iterator[BadRow]:
    """The rows of ``model`` holding NUL or a lone surrogate in one of ``fields``, with their repair."""
    report.models += 1
    report.columns += len(fields)
    label = model._meta.label
    for pk, *values in _stored_values(model, fields, chunk_size):
        report.rows += 1
        row = BadRow(model, pk)
        for column, stored in zip(fields, values, strict=True):
            _check_value(row, label, column, stored)
        if row.found or row.left_because:
            yield row


def _check_value(row: BadRow, label: str, column: models.Field[Any, Any], stored: Any) -> None:
    """Add what ``stored`` (one field of ``row``, as the database gave it) holds to ``row``, with its repair."""
    if stored is None:
        return
    where = f"{label} pk={row.pk} field {column.name}"
    json_text = f"{label}.{column.name}" in JSON_IN_TEXT
    raw = isinstance(stored, bytes | memoryview)  # SQLite: the column's bytes; elsewhere the ORM's value
    value = _decoded(stored) if raw else stored
    if json_text or (raw and isinstance(column, models.JSONField)):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            row.left_because.append(f"{where}: not valid JSON ({error.msg} at column {error.colno}), so --fix "
                                    "leaves the row unchanged; repair it by hand")
            return
    found = [StoredText(label, row.pk, column.name, unstorable) for unstorable in iter_unstorable(value)]
    if not found:
        return
    row.found += found
    repaired, collisions = repair_unstorable(value)
    row.left_because += [
        f"{where}, key '{path}': repaired, its name would be another key's name in the same object, so --fix "
        "leaves the row unchanged (merging would lose one of the two); rename one of the keys by hand"
        for path in collisions
    ]
    row.repaired[column.name] = json.dumps(repaired) if json_text else repaired  # as results_cache writes it


def _stored_values(
    model: type[models.Model], fields: list[models.Field[Any, Any]], chunk_size: int
) -> Iterator[tuple[Any, ...]]:
    """(pk, value of each field) for every row, in chunks. On SQLite each value comes as the bytes the database
    holds (a JSON column's text unparsed), which the ORM's own reading would fail on when they are not UTF-8."""
    if connection.vendor == "sqlite":
        columns: list[Any] = [Cast(column.name, output_field=models.BinaryField()) for column in fields]
    else:
        columns = [column.name for column in fields]
    rows = model._base_manager.order_by("pk").values_list("pk", *columns)
    return rows.iterator(chunk_size=chunk_size)


def _decoded(stored: bytes | memoryview) -> str:
    """Text as SQLite holds it, even when it is not UTF-8: a surrogate written as its three bytes (ED A0 80) becomes
    that surrogate; should other bytes be invalid too, each becomes one lone surrogate (Python's surrogateescape),
    so the check names it and a repair replaces it."""
    raw = bytes(stored)
    try:
        return raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "surrogateescape")

