"""Reading an imported file's JSON: one reader for every importer, so each refuses the same things the same way.

Pure: no Django imports. Every importer (FaithBench batch files, samples JSONL, pair, HaDes and raw-text files,
judge outputs, synthetic rewrites) decodes its bytes with :func:`decoded`, parses each document or line with
:func:`loads`, and walks what it parsed with :func:`find_refused` (a sample or a line at a time, so the message
can name it). What they refuse, beyond what ``json`` itself refuses:

- text that is not UTF-8: a zip or gzip archive, UTF-16 or UTF-32 text (Windows editors' "Unicode"), or other
  bytes (Latin-1, say) are each named, with what to do, instead of "invalid continuation byte at byte 15";
- ``NaN``, ``Infinity`` and ``-Infinity`` (Python's json reads and writes them, JSON has no such values) and
  numbers too large for a double (``1e999`` reads as infinity): no database stores them in a JSON column
  (SQLite's CHECK JSON_VALID, PostgreSQL's "Token NaN is invalid"), so they were a 500 once written;
- a key given twice in one object: ``json`` keeps the last value silently, so a file meant one thing and
  imported another;
- lists and objects nested more than MAX_DEPTH levels deep: deeper was a RecursionError (a 500, a traceback)
  past about a thousand levels, and nothing a real file holds comes near a hundred;
- text the database cannot store (NUL, a lone surrogate: annotate.storable), as before.

Each refusal names the field by its path in the value walked (``metadata.hhem-2.1``, ``annotations[0].note``),
so with the file and the sample or line the caller adds, it says what is wrong and where.
"""

from __future__ import annotations

import codecs
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from annotate.storable import PATH_SHOWN, UNSTORABLE, Unstorable, json_error
from annotate.storable import _child as child_path

MAX_DEPTH = 100  # lists and objects inside one another; FaithBench metadata is two or three deep
NOT_NUMBERS = ("NaN", "Infinity", "-Infinity")  # what parse_constant is handed
ZIP_STARTS = (b"PK\x03\x04", b"PK\x05\x06")  # a zip's first entry, or the end record of an empty zip
GZIP_START = b"\x1f\x8b"
# Longest first: the UTF-32 little-endian mark begins with the UTF-16 one.
BYTE_ORDER_MARKS = (
    (codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"),
)


class Unreadable(ValueError):
    """A file or a line that is no JSON this reader takes; the message says why, without the file's name."""


def is_zip(content: bytes | str) -> bool:
    return isinstance(content, bytes) and content.startswith(ZIP_STARTS)


def _wide_encoding(content: bytes) -> str | None:
    """UTF-16 or UTF-32, told by a byte order mark or, without one, by the zero bytes around the first characters:
    JSON text starts with an ASCII character, which these encodings write with one or three zero bytes."""
    for mark, name in BYTE_ORDER_MARKS:
        if content.startswith(mark):
            return name
    head = content[:4]
    if len(head) < 4:
        return None
    zeros = [byte == 0 for byte in head]
    if zeros in ([False, True, True, True], [True, True, True, False]):
        return "UTF-32"
    if zeros in ([False, True, False, True], [True, False, True, False]):
        return "UTF-16"
    return None


def not_text(content: bytes | str, save_as: str = "UTF-8") -> str | None:
    """Why ``content`` is not the UTF-8 text an import reads, told from its first bytes (an archive, UTF-16 or
    UTF-32 text), or None. Cheap: for a reader that must tell this before sniffing the file's lines."""
    if isinstance(content, str):
        return None
    if is_zip(content):
        return "this is a zip archive, not a text file: unzip it and import the files it holds"
    if content.startswith(GZIP_START):
        return "this is a gzip-compressed file, not a text file: decompress it (gunzip) and import the file it holds"
    if (encoding := _wide_encoding(content)) is not None:
        return f"this is {encoding} text, not UTF-8: save it as {save_as} (an editor's Save as, encoding UTF-8)"
    return None


def decoded(content: bytes | str, save_as: str = "UTF-8") -> str:
    """The file's text: UTF-8, a byte order mark (Windows editors write one) dropped. Unreadable names what it is
    instead and how to fix it, ``save_as`` naming what to save it as ("UTF-8 JSONL")."""
    if isinstance(content, str):
        return content.removeprefix("\ufeff")
    if (reason := not_text(content, save_as)) is not None:
        raise Unreadable(reason)
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise Unreadable(f"not UTF-8 text ({error.reason} at byte {error.start}); save it as {save_as}") from None


class _Written(float):
    """A number no database stores (NaN, an infinity), with its spelling in the file for the message."""

    written: str

    def __new__(cls, value: float, written: str) -> _Written:
        number = super().__new__(cls, value)
        number.written = written
        return number


class _RepeatedKeys(dict):
    """An object that gave a key more than once: ``json``'s own result (the last value kept), and the keys."""

    repeated: list[str]


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) == len(pairs):
        return found
    marked = _RepeatedKeys(found)
    marked.repeated = []
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            marked.repeated.append(key)
        seen.add(key)
    return marked


def _constant(name: str) -> float:
    return _Written(float(name.lower().replace("infinity", "inf")), name)


def _float(text: str) -> float:
    number = float(text)
    return number if math.isfinite(number) else _Written(number, text)


def loads(text: str, *, with_line: bool = True) -> Any:
    """``json.loads`` for imported text. What it reads but no import may keep (NaN, a repeated key) is marked for
    find_refused; Unreadable for text that is no JSON (``json``'s error in words, at its line unless
    ``with_line`` is false, for a JSONL line whose caller names the line) or that nests too deeply to read."""
    try:
        return json.loads(text, object_pairs_hook=_object, parse_constant=_constant, parse_float=_float)
    except json.JSONDecodeError as error:
        raise Unreadable(json_error(error, with_line=with_line)) from None
    except RecursionError:
        raise Unreadable(f"lists and objects are nested too deeply to read (the limit is {MAX_DEPTH} levels)") from None


@dataclass(frozen=True)
class Refused:
    """What an import refuses in a parsed value, and where: the field's path and the problem."""

    path: str  # "metadata.hhem-2.1", "annotations[0].note"; "" for the value itself
    problem: str

    def describe(self) -> str:
        """``field 'metadata.hhem-2.1' is NaN, ...``, after the file and the sample or line."""
        path = self.path
        if len(path) > PATH_SHOWN:  # deep nesting: the start says which field, the end which value in it
            half = (PATH_SHOWN - 3) // 2
            path = f"{path[:half]}...{path[-half:]}"
        if not path:
            return self.problem
        # Unstorable's problems follow a colon, as before; the others read as a sentence about the field.
        separator = ": " if self.problem.startswith(("contains", "its name")) else " "
        return f"field '{path}'{separator}{self.problem}"


def _number_problem(number: float) -> str:
    written = getattr(number, "written", repr(number))
    if written in NOT_NUMBERS or math.isnan(number):
        return f"is {written}, which JSON does not allow and no database stores; write a number or null"
    return (f"is {written}, too large a number to store (the largest is about 1.8e308); write a smaller number "
            "or null")


def find_refused(value: Any, path: str = "", *, skip: str | None = None) -> Refused | None:
    """The first thing in ``value`` (as :func:`loads` parsed it) that an import refuses, in file order: text the
    database cannot store, NaN or an infinity, a key given twice, nesting deeper than MAX_DEPTH. ``path`` names
    ``value`` itself; ``skip`` is a key of ``value`` left unwalked (FaithBench's ``samples``, walked a sample at a
    time). Walked with a stack, not recursion."""
    pending: list[tuple[str, Any, bool, int]] = [(path, value, False, 0)]  # (path, value, is it a key, depth)
    while pending:
        where, item, is_key, depth = pending.pop()
        if isinstance(item, str):
            if (found := UNSTORABLE.search(item)) is not None:
                return Refused(where, Unstorable(where, in_key=is_key, character=found.group()).problem)
        elif isinstance(item, float):
            if not math.isfinite(item):
                return Refused(where, _number_problem(item))
        elif isinstance(item, Mapping | list | tuple):
            if depth >= MAX_DEPTH:
                return Refused(where, f"nests lists and objects more than {MAX_DEPTH} levels deep; no import "
                                      "takes that many")
            children: list[tuple[str, Any, bool, int]] = []
            if isinstance(item, Mapping):
                if isinstance(item, _RepeatedKeys):
                    key = item.repeated[0]
                    return Refused(child_path(where, key), "is given twice in one object; give each field once (a "
                                                           "reader would silently keep only the last value)")
                for key, child in item.items():
                    if depth == 0 and key == skip:
                        continue
                    key_path = child_path(where, str(key))
                    children += [(key_path, key, True, depth), (key_path, child, False, depth + 1)]
            else:
                children = [(f"{where}[{index}]", child, False, depth + 1) for index, child in enumerate(item)]
            pending.extend(reversed(children))  # in file order: the message names the first one a reader meets
    return None
