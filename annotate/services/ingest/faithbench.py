"""Reading a FaithBench batch file: samples with their annotations, checked before anything is written."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from annotate import imported_json
from annotate.models import Batch, Sample, SpanAnnotation
from annotate.services.ingest.checks import (
    ImportFailed,
    ImportProblems,
    _check_range,
    _filled_text,
    _fits,
    _offset,
    _shown,
    _where,
    batch_name_problem,
    described,
    max_length,
    username_limit,
)
from annotate.services.ingest.guess import looks_like_samples_jsonl
from annotate.services.ingest.parsed import ParsedBatch, ParsedSample, ParsedSpan
from annotate.services.ingest.unknown import DefinedFields
from annotate.taxonomy import LabelError, validate_labels

# The keys FaithBench writes for every annotation, in its order; what a file leaves out is noted under ABSENT_KEYS.
FAITHBENCH_ANNOTATION_KEYS = (
    "annot_id", "annotator_id", "annotator_name", "label", "note", "summary_span", "summary_start", "summary_end",
    "source_span", "source_start", "source_end",
)
ABSENT_KEYS = "_absent_keys"
# A sample's and an annotation's other keys are kept (an export writes them back); the file's other top-level keys
# are not, and the import's warnings name them (ingest.unknown).
TOP_LEVEL_FIELDS = DefinedFields("at the top level of a FaithBench batch file", "file", ("samples", "roster"))


def passage_key_for(source: str) -> str:
    return "sha1:" + hashlib.sha1(source.encode("utf-8"), usedforsecurity=False).hexdigest()[:20]


def _parse_annotation(raw: Any, sample: ParsedSample, taxonomy: dict[str, Any], where: str) -> ParsedSpan:
    if not isinstance(raw, dict):
        raise ImportFailed(f"{where}: each annotation must be an object")
    for required in ("label", "summary_start", "summary_end"):
        if required not in raw:
            raise ImportFailed(f"{where}: missing field '{required}'")
    name = raw.get("annotator_name")
    if not isinstance(name, str) or not name.strip():
        raise ImportFailed(f"{where}: field 'annotator_name' must be a non-empty string, found {described(name)}")
    _fits(name.strip(), username_limit(), where, "annotator_name")
    annotator_id = raw.get("annotator_id")
    if annotator_id is not None and (isinstance(annotator_id, bool) or not isinstance(annotator_id, (str, int))):
        raise ImportFailed(f"{where}: field 'annotator_id' must be a string, a number or null")
    if "annot_id" in raw:
        _fits(str(raw["annot_id"]), max_length(SpanAnnotation, "external_id"), where, "annot_id")
    try:
        labels = validate_labels(raw["label"], taxonomy, quote=_shown)
    except LabelError as error:
        raise ImportFailed(f"{where}: field 'label': {error}") from None
    note = raw.get("note")
    if note is not None and not isinstance(note, str):
        raise ImportFailed(f"{where}: field 'note' must be a string or null")
    start = _offset(raw["summary_start"], where, "summary_start")
    end = _offset(raw["summary_end"], where, "summary_end")
    _check_range(sample.summary, start, end, raw.get("summary_span"), where, "summary")
    source_start = raw.get("source_start")
    source_end = raw.get("source_end")
    source_text: str | None = None
    if source_start is None and source_end is None:
        pass
    elif source_start is None or source_end is None:
        raise ImportFailed(f"{where}: 'source_start' and 'source_end' must both be set or both be null")
    else:
        source_start = _offset(source_start, where, "source_start")
        source_end = _offset(source_end, where, "source_end")
        _check_range(sample.source, source_start, source_end, raw.get("source_span"), where, "source")
        source_text = sample.source[source_start:source_end]
    kept = {key: raw[key] for key in raw if key not in {"label", "summary_start", "summary_end", "source_start", "source_end"}}
    absent = [key for key in FAITHBENCH_ANNOTATION_KEYS if key not in raw]
    if absent:  # so that an export leaves out what the file left out (e.g. no source_* keys at all)
        kept[ABSENT_KEYS] = absent
    return ParsedSpan(
        annotator_name=name.strip(),
        labels=labels,
        note=note or "",
        start=start,
        end=end,
        text=sample.summary[start:end],
        source_start=source_start,
        source_end=source_end,
        source_text=source_text,
        external_id=str(raw.get("annot_id", "")),
        imported_fields=kept,
        annotator_id=str(annotator_id) if annotator_id is not None and str(annotator_id) != "" else None,
        origin=where,
    )


def _check_annot_id(raw: dict[str, Any], where: str, place: str, first_place: dict[str, str]) -> None:
    """Refuse an annot_id an earlier annotation of the file has: it names one annotation (an export writes it back,
    and whoever reads the file tells annotations apart by it). A null or absent one names nothing."""
    annot_id = raw.get("annot_id")
    if annot_id is None or str(annot_id) == "":
        return
    earlier = first_place.setdefault(str(annot_id), place)
    if earlier != place:
        raise ImportFailed(f"{where}: field 'annot_id' repeats {earlier}; an annot_id names one annotation of its file")


def parse_faithbench(content: bytes | str, file: str, taxonomy: dict[str, Any]) -> ParsedBatch:
    """Parse and check one FaithBench batch file.

    A file that is no FaithBench document at all (not UTF-8, not JSON, no list of samples) raises ImportFailed
    at once. Otherwise every problem is reported together (ImportProblems, capped as the JSONL reader caps it):
    each bad field of a sample, and the first fault of each annotation, in file order, so that a file is
    fixed in one pass rather than one error per upload.
    """
    try:
        text = imported_json.decoded(content)
    except imported_json.Unreadable as error:
        raise ImportFailed(f"{file}: {error}") from None
    if not text.strip():
        raise ImportFailed(f"{file}: the file is empty (or holds only white space); a FaithBench batch file is an object "
                           "with a list under 'samples'")
    try:
        document = imported_json.loads(text)
    except imported_json.Unreadable as error:
        hint = looks_like_samples_jsonl(text)
        raise ImportFailed(f"{file}: {error}" + (f"; {hint}" if hint else "")) from None
    if not isinstance(document, dict) or not isinstance(document.get("samples"), list):
        raise ImportFailed(f"{file}: expected an object with a list under 'samples'")
    problems: list[str] = []
    # NUL or a lone surrogate anywhere (a note, a metadata key, a name) is refused on every database, and so are
    # NaN, a key given twice and too deep a nesting (annotate.imported_json); the samples are walked one by one.
    if (found := imported_json.find_refused(document, skip="samples")) is not None:
        problems.append(f"{file}: {found.describe()}")
    if not document["samples"]:
        problems.append(f"{file}: no samples: the list under 'samples' is empty")
    samples: list[ParsedSample] = []
    seen_ids: set[str] = set()
    annotations_by_id: dict[str, str] = {}  # annot_id -> where the file first gives it
    for index, raw in enumerate(document["samples"]):
        sample = _parse_sample(raw, index, file, taxonomy, seen_ids, annotations_by_id, problems)
        if sample is not None:
            samples.append(sample)
    stem = Path(file).stem
    if (problem := batch_name_problem(stem)) is not None:
        problems.append(f"{file}: the batch name {_shown(stem)} (the file name without its extension) {problem}; "
                        "rename the file")
    elif len(stem) > max_length(Batch, "name"):
        problems.append(
            f"{file}: the batch name (the file name without its extension) has {len(stem)} characters; "
            f"the limit is {max_length(Batch, 'name')}"
        )
    roster = document.get("roster")
    if roster is not None and (not isinstance(roster, list) or not all(isinstance(n, str) for n in roster)):
        problems.append(f"{file}: field 'roster' must be a list of annotator names")
        roster = None
    for name in roster or []:
        _noted(lambda name=name: _fits(name, username_limit(), f"{file}: roster name {_shown(name)}", "roster"),
               problems)
    if problems:
        raise ImportProblems(problems)
    return ParsedBatch(name=stem, samples=samples, roster=roster, file=file,
                       unknown_keys=TOP_LEVEL_FIELDS.unknown(document))


def _noted(check: Callable[[], Any], problems: list[str]) -> Any:
    """The check's value, or None once its problem is added to ``problems``: the other checks still run."""
    try:
        return check()
    except ImportFailed as failure:
        problems.append(str(failure))
        return None


def _parse_sample(
    raw: Any, index: int, file: str, taxonomy: dict[str, Any], seen_ids: set[str], annotations_by_id: dict[str, str],
    problems: list[str],
) -> ParsedSample | None:
    """One sample of the file with its annotations, or None after adding each of its problems to ``problems``."""
    if not isinstance(raw, dict):
        problems.append(f"{_where(file, index)}: each sample must be an object")
        return None
    where = _where(file, index, raw.get("sample_id"))
    if (found := imported_json.find_refused(raw)) is not None:
        problems.append(f"{where}: {found.describe()}")
        return None
    found_before = len(problems)
    problems.extend(f"{where}: missing field '{name}'" for name in ("sample_id", "source", "summary") if name not in raw)
    sample_id = raw.get("sample_id")
    if "sample_id" in raw:
        if isinstance(sample_id, bool) or not isinstance(sample_id, (int, str)):
            problems.append(f"{where}: field 'sample_id' must be a number or a string")
        elif str(sample_id) in seen_ids:
            problems.append(f"{where}: field 'sample_id' repeats an earlier sample")
        else:
            seen_ids.add(str(sample_id))
            _noted(lambda: _fits(str(sample_id), max_length(Sample, "external_id"), where, "sample_id"), problems)
    source = _noted(lambda: _filled_text(raw["source"], where, "source"), problems) if "source" in raw else None
    summary = _noted(lambda: _filled_text(raw["summary"], where, "summary"), problems) if "summary" in raw else None
    metadata = raw.get("metadata", {})
    if metadata is None:
        metadata = {}
    generator = ""
    if not isinstance(metadata, dict):
        problems.append(f"{where}: field 'metadata' must be an object")
    else:
        generator_field = "metadata.summarizer" if metadata.get("summarizer") else "metadata.generator"
        generator = metadata.get("summarizer") or metadata.get("generator") or ""
        if not isinstance(generator, str):
            problems.append(f"{where}: field '{generator_field}' must be a string")
        else:
            _noted(lambda: _fits(generator, max_length(Sample, "generator"), where, generator_field), problems)
    annotations = raw.get("annotations") or []
    if not isinstance(annotations, list):
        problems.append(f"{where}: field 'annotations' must be a list")
        annotations = []
    if source is None or summary is None:  # the annotations' offsets are read against both texts
        return None
    kept = {key: raw[key] for key in raw if key not in {"source", "summary", "annotations", "metadata"}}
    kept["has_metadata"] = "metadata" in raw
    kept["has_annotations"] = "annotations" in raw
    sample = ParsedSample(
        passage_key=passage_key_for(source),
        source=source,
        summary=summary,
        generator=generator if isinstance(generator, str) else "",
        external_id=str(sample_id),
        metadata=metadata if isinstance(metadata, dict) else {},
        imported_fields=kept,
    )
    for number, annotation in enumerate(annotations):
        annot_where = f"{where}: annotation #{number}"
        if isinstance(annotation, dict) and "annot_id" in annotation:
            annot_where += f" (annot_id {_shown(annotation['annot_id'])})"
        span = _noted(lambda annotation=annotation, annot_where=annot_where: _parse_annotation(
            annotation, sample, taxonomy, annot_where), problems)
        if span is not None:
            sample.spans.append(span)
            _noted(lambda annotation=annotation, annot_where=annot_where: _check_annot_id(
                annotation, annot_where, annot_where.removeprefix(f"{file}: "), annotations_by_id), problems)
    return sample if len(problems) == found_before else None
