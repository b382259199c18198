"""The parsed form every pair reader produces and the write step takes: originals, perturbed texts, items."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from annotate.services.pairs.ingest.lines import Line


@dataclass
class ParsedOriginal:
    external_id: str
    text: str
    line: Line  # the line that introduced it, for messages
    id_field: str  # the field its id came from ("id", "original_id", or "item_id" when generated from it)


@dataclass
class ParsedText:
    text: str
    source: str  # PerturbedText.Source value
    original: str | None  # external id of its ParsedOriginal; None for HaDes rows
    group: str
    line: Line  # its first line


@dataclass
class ParsedItem:
    text_index: int  # index into ParsedImport.texts
    external_id: str
    perturbed_start: int
    perturbed_end: int
    perturbed_words: str
    original_start: int | None = None
    original_end: int | None = None
    original_words: str = ""
    label: str = ""  # "H" or "N" when the file labelled it: the item is then `labelled`, else in the pool
    from_consensus: bool = False  # the label is the line's exported consensus (pairs format, consensus_as_label)
    metadata: dict[str, Any] = field(default_factory=dict)
    imported_fields: dict[str, Any] = field(default_factory=dict)
    line: Line | None = None


@dataclass
class ParsedImport:
    originals: dict[str, ParsedOriginal] = field(default_factory=dict)
    texts: list[ParsedText] = field(default_factory=list)
    items: list[ParsedItem] = field(default_factory=list)
    # Pair lines whose exported consensus H or N was not imported (consensus_as_label off), for the warning.
    unread_consensus: list[Line] = field(default_factory=list)
