"""Text the database can store: no NUL (U+0000), no lone surrogate (U+D800..U+DFFF). Pure: no Django imports.

PostgreSQL refuses NUL in text and jsonb columns (a DataError, so a 500) while
SQLite keeps it, so one rule holds on both: input holding NUL is refused before
anything is written, with a message naming where it is. A lone surrogate (JSON
can write one, ``"\\ud800"``: half of a UTF-16 pair, not a character) has no
UTF-8 form: PostgreSQL refuses it, SQLite refuses it in a text column and keeps
it in a JSON one, where every later reader fails on it (the exports, the
sample's API, the results page). It is refused the same way. Imported files are
walked whole (values, nested values and object keys, which jsonb columns keep
too); request fields are checked by config.nul_guard, JSON request bodies by
annotate.api.parsers.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

NUL = "\x00"
REPLACEMENT = "\ufffd"  # what check_text --fix writes for NUL or a lone surrogate: U+FFFD, the replacement character
NUL_PROBLEM = "contains a NUL character (\\u0000), which the database cannot store"
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")  # NUL or a lone surrogate (a str holds a pair as one code point)
KEY_SHOWN = 40  # characters of an object key shown in a path before "..."
PATH_SHOWN = 120  # characters of a path shown in a message: its start and its end, "..." between


def escaped(character: str) -> str:
    """How a message writes a character it cannot show: ``\\u0000``, ``\\ud800``, as JSON writes it."""
    return f"\\u{ord(character):04x}"


def surrogate_problem(character: str) -> str:
    """Says how one usually comes about, so the researcher knows what to look for in the file."""
    return (f"contains a lone surrogate ({escaped(character)}): half of a UTF-16 pair (an emoji cut in two, say), "
            "which is not a character and cannot be stored as text")


@dataclass(frozen=True)
class Unstorable:
    """Where a character the database cannot store is in a parsed JSON value: the path of the field, whether it
    is in the field's name, and the character (NUL or a lone surrogate)."""

    path: str  # "annotations[0].note"; an object key is shown with such a character escaped (\u0000, \ud800)
    in_key: bool = False
    character: str = NUL

    @property
    def problem(self) -> str:
        """What is wrong, without where: for messages that name the field in their own way."""
        problem = NUL_PROBLEM if self.character == NUL else surrogate_problem(self.character)
        return f"its name {problem}" if self.in_key else problem

    def describe(self) -> str:
        """``field 'annotations[0].note': contains a NUL character (\\u0000), ...``, after the file and line."""
        path = self.path
        if len(path) > PATH_SHOWN:  # deep nesting: the start says which field, the end which value in it
            half = (PATH_SHOWN - 3) // 2
            path = f"{path[:half]}...{path[-half:]}"
        return f"field '{path}': {self.problem}"


def _key_shown(key: str) -> str:
    shown = UNSTORABLE.sub(lambda found: escaped(found.group()), key)
    return shown if len(shown) <= KEY_SHOWN else shown[: KEY_SHOWN - 3] + "..."


def _child(path: str, key: str) -> str:
    return f"{path}.{_key_shown(key)}" if path else _key_shown(key)


def find_unstorable(value: Any, path: str = "") -> Unstorable | None:
    """The first NUL or lone surrogate in ``value`` (a string, or JSON objects and lists nested to any depth), keys
    included.

    ``path`` names ``value`` itself ("" for a whole line or sample, whose keys then start the path).
    """
    return next(iter_unstorable(value, path), None)


def iter_unstorable(value: Any, path: str = "") -> Iterator[Unstorable]:
    """Every string of ``value`` (keys included) that holds NUL or a lone surrogate, in file order, each named by
    its first such character: an import stops at the first, the check of stored rows (check_text) lists them all.

    Walked with a stack rather than recursion, so a deeply nested file cannot exhaust Python's recursion limit.
    """
    pending: list[tuple[str, Any, bool]] = [(path, value, False)]  # (path, value, whether it is a key)
    while pending:
        where, item, is_key = pending.pop()
        if isinstance(item, str):
            if (found := UNSTORABLE.search(item)) is not None:
                yield Unstorable(where, in_key=is_key, character=found.group())
        elif isinstance(item, Mapping):
            children: list[tuple[str, Any, bool]] = []
            for key, child in item.items():
                key_path = _child(where, str(key))
                children += [(key_path, key, True), (key_path, child, False)]
            pending.extend(reversed(children))  # in file order: the message names the first one a reader meets
        elif isinstance(item, list | tuple):
            pending.extend(reversed([(f"{where}[{index}]", child, False) for index, child in enumerate(item)]))


def replace_unstorable(text: str) -> str:
    """``text`` with each NUL and each lone surrogate replaced by U+FFFD: one code point for one, so the code-point
    offsets stored beside a text (spans, sentences, pair items) still point at the same characters."""
    return UNSTORABLE.sub(REPLACEMENT, text)


def repair_unstorable(value: Any, path: str = "") -> tuple[Any, list[str]]:
    """``value`` (a string, or JSON objects and lists) with every NUL and lone surrogate replaced (replace_unstorable),
    object keys too; and the paths of the keys whose repaired name is also another key's name in the same object.

    With such a collision the repaired object would lose one of the entries, so the caller must not keep it:
    merging two fields silently is worse than leaving the row as it is. ``value`` itself is not changed (a copy is
    returned), and it is walked with a stack, as iter_unstorable is.
    """
    collisions: list[str] = []
    root: dict[str, Any] = {}
    pending: list[tuple[str, Any, Any, Any]] = [(path, value, root, "value")]  # (path, value, its copy's parent, slot)
    while pending:
        where, item, parent, slot = pending.pop()
        if isinstance(item, Mapping):
            names = [replace_unstorable(key) if isinstance(key, str) else key for key in item]
            taken = Counter(names)
            copied: dict[Any, Any] = {}
            for (key, child), name in zip(item.items(), names, strict=True):
                if name != key and taken[name] > 1:
                    collisions.append(_child(where, str(key)))
                copied[name] = None  # keeps the key order; the child's copy fills it
                pending.append((_child(where, str(key)), child, copied, name))
            parent[slot] = copied
        elif isinstance(item, list | tuple):
            parent[slot] = listed = [None] * len(item)
            pending.extend((f"{where}[{index}]", child, listed, index) for index, child in enumerate(item))
        else:
            parent[slot] = replace_unstorable(item) if isinstance(item, str) else item
    return root["value"], collisions


def find_unstorable_field(fields: Iterable[tuple[str, Any]]) -> tuple[str, Unstorable] | None:
    """The first of a request's fields (name, value) whose name or value holds NUL or a lone surrogate: the field as
    an answer names it (a name holding one shown escaped), and where in its value."""
    for name, value in fields:
        if (found := find_unstorable({name: value})) is not None:
            return (found.path if found.in_key else name), found  # a name found clean is shown as it is
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
