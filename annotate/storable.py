"""Text the database can store: no NUL character (U+0000). Pure: no Django imports.

PostgreSQL refuses NUL in text and jsonb columns (a DataError, so a 500) while
SQLite keeps it, so one rule holds on both: input holding NUL is refused before
anything is written, with a message naming where it is. Imported files are
walked whole (values, nested values and object keys, which jsonb columns keep
too); request fields are checked by config.nul_guard.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

NUL = "\x00"
NUL_PROBLEM = "contains a NUL character (\\u0000), which the database cannot store"
KEY_SHOWN = 40  # characters of an object key shown in a path before "..."
PATH_SHOWN = 120  # characters of a path shown in a message: its start and its end, "..." between


@dataclass(frozen=True)
class NulFound:
    """Where a NUL is in a parsed JSON value: the path of the field, and whether it is in the field's name."""

    path: str  # "annotations[0].note"; an object key is shown with its NUL written \u0000
    in_key: bool = False

    @property
    def problem(self) -> str:
        """What is wrong, without where: for messages that name the field in their own way."""
        return f"its name {NUL_PROBLEM}" if self.in_key else NUL_PROBLEM

    def describe(self) -> str:
        """``field 'annotations[0].note': contains a NUL character (\\u0000), ...``, after the file and line."""
        path = self.path
        if len(path) > PATH_SHOWN:  # deep nesting: the start says which field, the end which value in it
            half = (PATH_SHOWN - 3) // 2
            path = f"{path[:half]}...{path[-half:]}"
        return f"field '{path}': {self.problem}"


def _key_shown(key: str) -> str:
    shown = key.replace(NUL, "\\u0000")
    return shown if len(shown) <= KEY_SHOWN else shown[: KEY_SHOWN - 3] + "..."


def _child(path: str, key: str) -> str:
    return f"{path}.{_key_shown(key)}" if path else _key_shown(key)


def find_nul(value: Any, path: str = "") -> NulFound | None:
    """The first NUL in ``value`` (a string, or JSON objects and lists nested to any depth), keys included.

    ``path`` names ``value`` itself ("" for a whole line or sample, whose keys then start the path). Walked
    with a stack rather than recursion, so a deeply nested file cannot exhaust Python's recursion limit.
    """
    pending: list[tuple[str, Any, bool]] = [(path, value, False)]  # (path, value, whether it is a key)
    while pending:
        where, item, is_key = pending.pop()
        if isinstance(item, str):
            if NUL in item:
                return NulFound(where, in_key=is_key)
        elif isinstance(item, Mapping):
            children: list[tuple[str, Any, bool]] = []
            for key, child in item.items():
                key_path = _child(where, str(key))
                children += [(key_path, key, True), (key_path, child, False)]
            pending.extend(reversed(children))  # in file order: the message names the first NUL a reader meets
        elif isinstance(item, list | tuple):
            pending.extend(reversed([(f"{where}[{index}]", child, False) for index, child in enumerate(item)]))
    return None


def json_error(error: json.JSONDecodeError, *, with_line: bool = True) -> str:
    """A JSON decoding error in words: ``not valid JSON: Invalid control character (U+0000, a NUL: the database cannot
    store it) at line 1 column 50``. The decoder's own message for a raw control character ends with "at" (its
    position follows in the exception's text), which read "at at line ..." after our position."""
    message = error.msg.removesuffix(" at")
    if 0 <= error.pos < len(error.doc) and unicodedata.category(error.doc[error.pos]) == "Cc":
        code = ord(error.doc[error.pos])
        message += " (U+0000, a NUL: the database cannot store it)" if code == 0 else f" (U+{code:04X})"
    where = f"line {error.lineno} column {error.colno}" if with_line else f"column {error.colno}"
    return f"not valid JSON: {message} at {where}"
