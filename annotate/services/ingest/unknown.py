"""Fields a format does not define, named in the import's warnings rather than dropped without a word.

The rule every importer follows: FaithLab's own strict formats (pair files, raw texts, judge outputs) refuse a
field they do not define; formats that keep what they do not read (HaDes rows, a FaithBench sample's and
annotation's extra keys) keep it; everywhere else the import goes on and its warnings name each such field, how
many lines (or files) had it and where it was first seen, so that a misspelt optional field (``metdata``,
``reasoning `` with a space) is noticed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from annotate.services.ingest.checks import _shown

MAX_NAMED = 10  # unknown fields an import names one by one; the others are counted


@dataclass(frozen=True)
class DefinedFields:
    """The fields a format defines, for telling the others apart and for the warning that names them."""

    defined_by: str  # how the warning says whose fields these are: "by the samples JSONL format"
    unit: str  # what had the field: "line", "file"
    fields: tuple[str, ...]  # the format's fields, as the warning lists them
    # Accepted and left unread without a word: what an export writes that the import does not take back.
    ignored: frozenset[str] = frozenset()

    def unknown(self, row: Mapping[str, Any]) -> tuple[str, ...]:
        """The keys of ``row`` the format neither defines nor ignores, in the row's order."""
        return tuple(name for name in row if name not in self.fields and name not in self.ignored)


@dataclass
class UnknownField:
    name: str
    count: int  # lines (or files) that had it
    first: str  # where it was first seen: "s.jsonl: line 3"
    defined: DefinedFields

    def describe(self) -> str:
        unit = self.defined.unit
        had = f"{self.count} {unit}{'' if self.count == 1 else 's'}"
        return (
            f"Field {_shown(self.name)} is not defined {self.defined.defined_by} and was not imported: {had} had it, "
            f"the first {self.first}; the rest of {'the' if self.count == 1 else 'each'} {unit} was imported. The "
            f"fields defined {self.defined.defined_by} are {', '.join(self.defined.fields)}: check the spelling."
        )


class UnknownFields:
    """The unknown fields an import met, each counted once a line (or file), in the order first seen."""

    def __init__(self) -> None:
        self._fields: dict[tuple[str, str], UnknownField] = {}

    def note(self, defined: DefinedFields, names: Iterable[str], where: str) -> None:
        """``names`` (unknown fields of one line or file, each once) were found at ``where``."""
        for name in dict.fromkeys(names):
            known = self._fields.get((defined.defined_by, name))
            if known is None:
                self._fields[(defined.defined_by, name)] = UnknownField(name, 1, where, defined)
            else:
                known.count += 1

    def fields(self) -> list[UnknownField]:
        return list(self._fields.values())


def describe_unknown_fields(fields: list[UnknownField]) -> list[str]:
    """A warning for each unknown field (the first MAX_NAMED), and how many more there were."""
    lines = [field.describe() for field in fields[:MAX_NAMED]]
    if len(fields) > MAX_NAMED:
        more = fields[MAX_NAMED:]
        lines.append(f"... and {len(more)} more unknown fields, also not imported: "
                     f"{', '.join(_shown(field.name) for field in more[:20])}{', ...' if len(more) > 20 else ''}.")
    return lines
