"""Raw texts to perturb: JSONL ``{"id": ..., "text": ...}``, one PairOriginal a line."""

from __future__ import annotations

from annotate.models import PairOriginal
from annotate.services.ingest.checks import ImportFailed, max_length
from annotate.services.pairs.ingest.lines import Line, Problems, check_fields, identifier, nonempty_text
from annotate.services.pairs.ingest.parsed import ParsedImport, ParsedOriginal

RAW_FIELDS = frozenset({"id", "text"})


def parse_raw(lines: list[Line], problems: Problems) -> ParsedImport:
    parsed = ParsedImport()
    limit = max_length(PairOriginal, "external_id")
    for line in lines:
        try:
            check_fields(line, RAW_FIELDS, ("id", "text"), "raw")
            external_id = identifier(line.row["id"], line.where, "id", limit)
            text = nonempty_text(line.row["text"], line.where, "text")
        except ImportFailed as error:
            problems.add(str(error), line.at)
            continue
        earlier = parsed.originals.get(external_id)
        if earlier is not None:
            problems.add(f"{line.where}: field 'id' {external_id!r} was already given on {earlier.line.place}", line.at)
            continue
        parsed.originals[external_id] = ParsedOriginal(external_id, text, line, "id")
    return parsed
