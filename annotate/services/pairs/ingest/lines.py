"""Reading JSONL pair files line by line, and collecting every error of an import before giving up.

A pair import reports all its problems at once (up to checks.MAX_MESSAGES), each
naming the file, the line and the field, so a researcher fixes a file in one
pass instead of one error per try.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from annotate import imported_json
from annotate.services.ingest.checks import ImportFailed, ImportProblems, _fits, _offset, _shown, _text, described

LABELS = ("H", "N", "?")


class PairImportFailed(ImportProblems):
    """Bad input in a pair import: every message names the file, line and field; nothing was written."""

    def __init__(self, messages: list[str], total: int | None = None, *, already_imported: int = 0) -> None:
        # How many of the problems are rows already imported, which the skip-existing option leaves out instead.
        self.already_imported = already_imported
        super().__init__(messages, total)


@dataclass
class Problems:
    """The errors found so far, reported in file and line order whatever order the checks found them in."""

    found: list[tuple[tuple[int, int], int, str]] = field(default_factory=list)
    already_imported: int = 0  # of them, rows already in the project

    def add(self, message: str, at: tuple[int, int] = (-1, 0)) -> None:
        """``at`` is (file index, line number); the default puts the message first (project, format)."""
        self.found.append((at, len(self.found), message))

    def raise_if_any(self) -> None:
        if self.found:
            raise PairImportFailed([message for _, _, message in sorted(self.found)], len(self.found),
                                   already_imported=self.already_imported)


@dataclass
class Line:
    """One non-blank line of a file, parsed into a JSON object; ``text`` is the line exactly as it came."""

    file: str
    number: int
    text: str
    row: dict[str, Any]
    file_index: int = 0

    @property
    def at(self) -> tuple[int, int]:  # where its messages sort
        return (self.file_index, self.number)

    @property
    def where(self) -> str:  # prefix of this line's messages
        return f"{self.file}: line {self.number}"

    @property
    def place(self) -> str:  # how another line's message refers to this one
        return f"line {self.number} of {self.file}"


def read_lines(file: str, content: bytes | str, problems: Problems, file_index: int = 0) -> list[Line]:
    """The file's JSON objects, one a line; blank lines are skipped, bad lines reported and left out.

    A line holding NUL or a lone surrogate anywhere (a value, a nested metadata value, a key), NaN or an
    infinity, a key given twice, or too deep a nesting (annotate.imported_json) is a bad line: every reader
    (pairs, HaDes, raw texts, judgements) reads its lines here, so none stores what the database refuses or
    cannot give back. A file that is not UTF-8 text (an archive, UTF-16) is one message saying what it is.
    """
    try:
        content = imported_json.decoded(content, "UTF-8 JSONL")
    except imported_json.Unreadable as error:
        problems.add(f"{file}: {error}", (file_index, 0))
        return []
    lines: list[Line] = []
    bad = False
    # Split on newlines only: str.splitlines would also split inside a JSON string holding U+2028 or U+0085.
    for number, text in enumerate(content.split("\n"), start=1):
        text = text.removesuffix("\r")
        if not text.strip():
            continue
        where = f"{file}: line {number}"
        try:
            row = imported_json.loads(text, with_line=False)
        except imported_json.Unreadable as error:
            problems.add(f"{where}: {error}", (file_index, number))
            bad = True
            continue
        if not isinstance(row, dict):
            problems.add(f"{where}: expected a JSON object, found {described(row)}", (file_index, number))
            bad = True
            continue
        # NUL or a lone surrogate, NaN, a key given twice, too deep a nesting: refused on every database.
        if (found := imported_json.find_refused(row)) is not None:
            problems.add(f"{where}: {found.describe()}", (file_index, number))
            bad = True
            continue
        lines.append(Line(file=file, number=number, text=text, row=row, file_index=file_index))
    if not lines and not bad:
        problems.add(f"{file}: no rows (the file is empty or holds only blank lines)", (file_index, 0))
    return lines


def check_fields(
    line: Line, fields: frozenset[str], required: tuple[str, ...], kind: str, *, ignored: frozenset[str] = frozenset(),
    hint: str = "",
) -> None:
    """Unknown keys and missing required keys, named; ``ignored`` keys are accepted and left unread."""
    for name in line.row:
        if name not in fields and name not in ignored:
            raise ImportFailed(
                f"{line.where}: unknown field {name!r}; a {kind} line has only {', '.join(sorted(fields))}{hint}"
            )
    for name in required:
        if name not in line.row:
            raise ImportFailed(f"{line.where}: missing field '{name}'")


def identifier(value: Any, where: str, name: str, limit: int) -> str:
    """An id given as a non-empty string or a whole number, as a string that fits its column."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
        raise ImportFailed(f"{where}: field '{name}' must be a non-empty string or a whole number, found {described(value)}")
    return _fits(str(value), limit, where, name)


def nonempty_text(value: Any, where: str, name: str) -> str:
    text = _text(value, where, name)
    if not text.strip():
        raise ImportFailed(f"{where}: field '{name}' is empty")
    return text


def span(row: dict[str, Any], text: str, where: str, side: str) -> tuple[int, int, str]:
    """``<side>_start``/``<side>_end`` as code points, end-exclusive, inside ``text``; and the words there.

    ``<side>_words``, when given, must be exactly the text at the span.
    """
    start_name, end_name, words_name = f"{side}_start", f"{side}_end", f"{side}_words"
    for name in (start_name, end_name):
        if name not in row:
            raise ImportFailed(f"{where}: missing field '{name}'")
        if row[name] is None:
            raise ImportFailed(f"{where}: field '{name}' is null; it must be a whole number (a code-point offset)")
    start = _offset(row[start_name], where, start_name)
    end = _offset(row[end_name], where, end_name)
    if not 0 <= start < len(text):
        raise ImportFailed(
            f"{where}: field '{start_name}' {start} is out of range for the {side} text of {len(text)} characters"
        )
    if not 0 < end <= len(text):
        raise ImportFailed(
            f"{where}: field '{end_name}' {end} is out of range for the {side} text of {len(text)} characters"
        )
    if start >= end:
        raise ImportFailed(f"{where}: field '{end_name}' {end} must be greater than '{start_name}' {start}")
    words = text[start:end]
    stated = row.get(words_name)
    if stated is not None and stated != words:
        raise ImportFailed(
            f"{where}: field '{words_name}' {_shown(stated)} does not match the {side} text at {start}..{end}, "
            f"which is {_shown(words)}"
        )
    return start, end, words


def pair_label(value: Any, where: str) -> str:
    """An imported pair label: "H" or "N", or "" for none ("?" or null: the item is not labelled)."""
    if value is None or value == "?":
        return ""
    if isinstance(value, str) and value in LABELS:
        return value
    raise ImportFailed(f'{where}: field \'label\' must be "H", "N" or "?" (or null), found {described(value)}')
