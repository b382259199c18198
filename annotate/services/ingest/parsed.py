"""The parsed form both readers produce and the write step takes: batches, samples, spans."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ParsedSpan:
    annotator_name: str
    labels: list[str]
    note: str
    start: int
    end: int
    text: str
    source_start: int | None
    source_end: int | None
    source_text: str | None
    external_id: str
    imported_fields: dict[str, Any]
    annotator_id: str | None = None
    origin: str = ""  # where it is in its file, for messages


@dataclass
class ParsedSample:
    passage_key: str
    source: str
    summary: str
    generator: str
    external_id: str
    metadata: dict[str, Any]
    imported_fields: dict[str, Any] = field(default_factory=dict)
    spans: list[ParsedSpan] = field(default_factory=list)
    line: int | None = None  # its line in a samples JSONL file, for messages
    # Annotations a samples JSONL line carried (a JSONL export's line does), which that format does not import.
    unread_annotations: int = 0
    # Fields of its samples JSONL line that format does not define (ingest.unknown): not imported, named in warnings.
    unknown_fields: tuple[str, ...] = ()


@dataclass
class ParsedBatch:
    name: str
    samples: list[ParsedSample]
    roster: list[str] | None = None
    file: str = ""
    # Top-level keys of its FaithBench file besides 'samples' and 'roster': not imported, named in warnings.
    unknown_keys: tuple[str, ...] = ()
