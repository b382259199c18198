"""Reading unannotated samples from JSONL, one sample a line, grouped into batches."""

from __future__ import annotations

import json
from pathlib import Path

from annotate.models import Batch, Passage, Sample
from annotate.services.ingest.checks import ImportFailed, _fits, _shown, _text, max_length
from annotate.services.ingest.parsed import ParsedBatch, ParsedSample


def parse_samples_jsonl(
    content: bytes | str, file: str, *, passages_per_batch: int = 5, summaries_per_passage: int = 10
) -> list[ParsedBatch]:
    """Unannotated samples, one JSON object a line: passage_id, source, summary, generator,
    optional batch and metadata. Samples without a batch are grouped by passage,
    ``passages_per_batch`` passages a batch."""
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ImportFailed(f"{file}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    named: dict[str, list[ParsedSample]] = {}
    ungrouped: dict[str, list[ParsedSample]] = {}
    sources: dict[str, str] = {}
    for line_number, line in enumerate(content.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{file}: line {line_number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as error:
            raise ImportFailed(f"{where}: not valid JSON: {error.msg} at column {error.colno}") from None
        if not isinstance(raw, dict):
            raise ImportFailed(f"{where}: expected a JSON object")
        for required in ("passage_id", "source", "summary", "generator"):
            if required not in raw:
                raise ImportFailed(f"{where}: missing field '{required}'")
        passage_id = raw["passage_id"]
        if isinstance(passage_id, bool) or not isinstance(passage_id, (int, str)) or str(passage_id) == "":
            raise ImportFailed(f"{where}: field 'passage_id' must be a non-empty string or number")
        passage_key = str(passage_id)
        source = _text(raw["source"], where, "source")
        summary = _text(raw["summary"], where, "summary")
        generator = _text(raw["generator"], where, "generator")
        if sources.setdefault(passage_key, source) != source:
            raise ImportFailed(f"{where}: field 'source' differs from an earlier line with passage_id {passage_key!r}")
        metadata = raw.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise ImportFailed(f"{where}: field 'metadata' must be an object")
        batch = raw.get("batch")
        if batch is not None and (not isinstance(batch, (str, int)) or str(batch).strip() == ""):
            raise ImportFailed(f"{where}: field 'batch' must be a non-empty string")
        external_id = str(raw.get("sample_id", line_number))
        _fits(passage_key, max_length(Passage, "external_id"), where, "passage_id")
        _fits(generator, max_length(Sample, "generator"), where, "generator")
        _fits(external_id, max_length(Sample, "external_id"), where, "sample_id")
        if batch is not None:
            _fits(str(batch), max_length(Batch, "name"), where, "batch")
        sample = ParsedSample(
            passage_key=passage_key,
            source=source,
            summary=summary,
            generator=generator,
            external_id=external_id,
            metadata=metadata,
        )
        if batch is None:
            ungrouped.setdefault(passage_key, []).append(sample)
        else:
            named.setdefault(str(batch), []).append(sample)
    if not named and not ungrouped:
        raise ImportFailed(f"{file}: no samples")
    batches = [ParsedBatch(name=name, samples=samples, file=file) for name, samples in named.items()]
    keys = list(ungrouped)
    stem = Path(file).stem
    last_name = f"{stem}-{max(1, -(-len(keys) // passages_per_batch))}"
    if keys and len(last_name) > max_length(Batch, "name"):
        raise ImportFailed(
            f"{file}: the batch name {_shown(last_name)} (the file name without its extension and a number) "
            f"has {len(last_name)} characters; the limit is {max_length(Batch, 'name')}"
        )
    for number, first in enumerate(range(0, len(keys), passages_per_batch), start=1):
        group = keys[first : first + passages_per_batch]
        samples = [s for key in group for s in ungrouped[key][:summaries_per_passage]]
        overflow = [s for key in group for s in ungrouped[key][summaries_per_passage:]]
        if overflow:
            raise ImportFailed(
                f"{file}: passage {overflow[0].passage_key!r} has more than {summaries_per_passage} summaries; "
                "give those lines a 'batch'"
            )
        batches.append(ParsedBatch(name=f"{stem}-{number}", samples=samples, file=file))
    return batches
