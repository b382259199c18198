"""Reading unannotated samples from JSONL, one sample a line, grouped into batches."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from annotate import imported_json
from annotate.models import Batch, Passage, Sample
from annotate.services.ingest.checks import (
    ImportFailed,
    ImportProblems,
    _filled_text,
    _fits,
    _shown,
    _text,
    batch_name_problem,
    described,
    max_length,
)
from annotate.services.ingest.guess import looks_like_faithbench
from annotate.services.ingest.parsed import ParsedBatch, ParsedSample
from annotate.services.ingest.unknown import DefinedFields

REQUIRED = ("passage_id", "source", "summary", "generator")
# A line's other keys are imported with a warning that names them (ingest.unknown); a JSONL export's own keys are
# left unread without one (its 'annotations' get their own warning: unread_annotations).
SAMPLE_FIELDS = DefinedFields(
    "by the samples JSONL format", "line", (*REQUIRED, "sample_id", "batch", "metadata"),
    ignored=frozenset({"annotations", "round", "worst_label_by_annotator", "worst_label", "adjudicated",
                       "gold_stale"}),
)


def parse_samples_jsonl(
    content: bytes | str, file: str, *, passages_per_batch: int = 5, summaries_per_passage: int = 10
) -> list[ParsedBatch]:
    """Unannotated samples, one JSON object a line: passage_id, source, summary, generator,
    optional sample_id (default: the line number, unique within a batch), batch and metadata.
    Samples without a batch are grouped by passage, ``passages_per_batch`` passages a batch.

    Every problem of the file is reported at once (ImportProblems, each naming the file, the line
    and the field), so a researcher fixes the file in one pass instead of one error per upload.
    """
    text = _decoded(content, file)
    if (hint := looks_like_faithbench(text)) is not None:  # else one "not valid JSON" a line, saying nothing of it
        raise ImportFailed(f"{file}: {hint}")
    problems: list[str] = []
    named: dict[str, list[ParsedSample]] = {}
    ungrouped: dict[str, list[ParsedSample]] = {}
    sources: dict[str, str] = {}
    # Split on newlines only: str.splitlines would also split inside a JSON string holding U+2028 or
    # U+0085, and number the lines otherwise than an editor does.
    for line_number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        read = _read_line(line, f"{file}: line {line_number}", line_number, sources, problems)
        if read is not None:
            sample, batch = read
            group = ungrouped.setdefault(sample.passage_key, []) if batch is None else named.setdefault(batch, [])
            group.append(sample)
    if not named and not ungrouped and not problems:
        problems.append(f"{file}: no samples")
    batches = [ParsedBatch(name=name, samples=samples, file=file) for name, samples in named.items()]
    batches += _grouped(ungrouped, file, passages_per_batch, summaries_per_passage, problems)
    for batch in batches:
        problems.extend(_repeated_sample_ids(batch, file))
    if problems:
        raise ImportProblems(problems)
    return batches


def _decoded(content: bytes | str, file: str) -> str:
    """The file's text; a byte order mark (Windows editors write one) is not part of line 1."""
    try:
        return imported_json.decoded(content, "UTF-8 JSONL")
    except imported_json.Unreadable as error:
        raise ImportFailed(f"{file}: {error}") from None


def _read_line(
    line: str, where: str, line_number: int, sources: dict[str, str], problems: list[str]
) -> tuple[ParsedSample, str | None] | None:
    """One line's sample and batch name, or None after adding each of the line's problems."""
    try:
        raw = imported_json.loads(line, with_line=False)
    except imported_json.Unreadable as error:
        problems.append(f"{where}: {error}")
        return None
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a JSON object, found {described(raw)}")
        return None
    # NUL or a lone surrogate, NaN, a key given twice, too deep a nesting: refused on every database.
    if (refused := imported_json.find_refused(raw)) is not None:
        problems.append(f"{where}: {refused.describe()}")
        return None
    found = len(problems)
    problems.extend(f"{where}: missing field '{name}'" for name in REQUIRED if name not in raw)

    def checked(check: Callable[[], Any]) -> Any:
        """The check's value, or None once its problem is noted: the line's other fields are still read."""
        try:
            return check()
        except ImportFailed as failure:
            problems.append(str(failure))
            return None

    passage_key = checked(lambda: _passage_key(raw["passage_id"], where)) if "passage_id" in raw else None
    source = checked(lambda: _filled_text(raw["source"], where, "source")) if "source" in raw else None
    summary = checked(lambda: _filled_text(raw["summary"], where, "summary")) if "summary" in raw else None
    generator = checked(lambda: _generator(raw["generator"], where)) if "generator" in raw else None
    metadata = raw.get("metadata") or {}
    if not isinstance(metadata, dict):
        problems.append(f"{where}: field 'metadata' must be an object, found {described(metadata)}")
    batch = checked(lambda: _batch_name(raw.get("batch"), where))
    sample_id = raw.get("sample_id", line_number)
    if isinstance(sample_id, bool) or not isinstance(sample_id, (int, str)):
        problems.append(f"{where}: field 'sample_id' must be a string or a whole number, found {described(sample_id)}")
    external_id = checked(lambda: _fits(str(sample_id), max_length(Sample, "external_id"), where, "sample_id"))
    if passage_key is not None and source is not None and sources.setdefault(passage_key, source) != source:
        problems.append(f"{where}: field 'source' differs from an earlier line with passage_id {_shown(passage_key)}")
    if len(problems) > found:
        return None
    # A sample_id given as a number is written back as one (the exports' sample_id), as FaithBench files keep theirs.
    kept = {"sample_id": sample_id} if "sample_id" in raw and isinstance(sample_id, int) else {}
    annotations = raw.get("annotations")
    sample = ParsedSample(passage_key=passage_key, source=source, summary=summary, generator=generator,
                          external_id=external_id, metadata=metadata, imported_fields=kept, line=line_number,
                          unread_annotations=len(annotations) if isinstance(annotations, list) else 0,
                          unknown_fields=SAMPLE_FIELDS.unknown(raw))
    return sample, batch


def _repeated_sample_ids(batch: ParsedBatch, file: str) -> list[str]:
    """A problem for each sample whose id an earlier line of its batch has: a batch's samples are told apart
    by their ids (judgement imports, the FaithBench export and its re-import), so one id is one sample."""
    first_line: dict[str, int | None] = {}
    problems = []
    for sample in batch.samples:
        earlier = first_line.setdefault(sample.external_id, sample.line)
        if earlier != sample.line:
            problems.append(
                f"{file}: lines {earlier} and {sample.line}: both give sample_id {_shown(sample.external_id)} in "
                f"batch {_shown(batch.name)}; a sample_id names one sample of its batch (a line without one takes "
                "its line number)"
            )
    return problems


def _passage_key(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or str(value) == "":
        raise ImportFailed(f"{where}: field 'passage_id' must be a non-empty string or number")
    return _fits(str(value), max_length(Passage, "external_id"), where, "passage_id")


def _generator(value: Any, where: str) -> str:
    return _fits(_text(value, where, "generator"), max_length(Sample, "generator"), where, "generator")


def _batch_name(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
        raise ImportFailed(f"{where}: field 'batch' must be a non-empty string")
    name = _fits(str(value), max_length(Batch, "name"), where, "batch")
    if (problem := batch_name_problem(name)) is not None:
        raise ImportFailed(f"{where}: field 'batch' {_shown(name)} {problem}")
    return name


def _grouped(
    ungrouped: dict[str, list[ParsedSample]], file: str, passages_per_batch: int, summaries_per_passage: int,
    problems: list[str],
) -> list[ParsedBatch]:
    """Batches of ``passages_per_batch`` passages for the samples without a batch, named after the file."""
    keys = list(ungrouped)
    stem = Path(file).stem
    last_name = f"{stem}-{max(1, -(-len(keys) // passages_per_batch))}"
    if keys and (problem := batch_name_problem(last_name)) is not None:
        problems.append(
            f"{file}: the batch name {_shown(last_name)} (the file name without its extension and a number, for the "
            f"lines without a 'batch') {problem}; rename the file or give those lines a 'batch'"
        )
    elif keys and len(last_name) > max_length(Batch, "name"):
        problems.append(
            f"{file}: the batch name {_shown(last_name)} (the file name without its extension and a number) "
            f"has {len(last_name)} characters; the limit is {max_length(Batch, 'name')}"
        )
    problems.extend(
        f"{file}: passage {_shown(key)} has more than {summaries_per_passage} summaries; give those lines a 'batch'"
        for key in keys if len(ungrouped[key]) > summaries_per_passage
    )
    batches = []
    for number, first in enumerate(range(0, len(keys), passages_per_batch), start=1):
        group = keys[first : first + passages_per_batch]
        samples = [sample for key in group for sample in ungrouped[key][:summaries_per_passage]]
        batches.append(ParsedBatch(name=f"{stem}-{number}", samples=samples, file=file))
    return batches
