"""Importing samples: FaithBench batch files and a simple JSONL of unannotated samples.

Imports are all-or-nothing: every file is parsed and checked before the first
row is written, and the writes run in one transaction. Every error names the
file, the sample and the field.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from annotate.models import Assignment, Batch, Job, Membership, Passage, Project, Sample, SpanAnnotation
from annotate.taxonomy import LabelError, validate_labels

MAX_TEXT_CHARS = 1_000_000
# The keys FaithBench writes for every annotation, in its order; what a file leaves out is noted under ABSENT_KEYS.
FAITHBENCH_ANNOTATION_KEYS = (
    "annot_id", "annotator_id", "annotator_name", "label", "note", "summary_span", "summary_start", "summary_end",
    "source_span", "source_start", "source_end",
)
ABSENT_KEYS = "_absent_keys"


class ImportFailed(ValueError):
    """Bad input: the message names the file, the sample and the field."""


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


@dataclass
class ParsedBatch:
    name: str
    samples: list[ParsedSample]
    roster: list[str] | None = None


@dataclass
class ImportReport:
    project: Project
    batches: list[Batch]
    samples: int
    spans: int
    annotators: list[str]
    job: Job | None


def _where(file: str, index: int, sample_id: Any = None) -> str:
    label = f"sample {sample_id!r} (#{index})" if sample_id is not None else f"sample #{index}"
    return f"{file}: {label}"


def _text(value: Any, where: str, name: str) -> str:
    if not isinstance(value, str):
        raise ImportFailed(f"{where}: field '{name}' must be a string, got {type(value).__name__}")
    if len(value) > MAX_TEXT_CHARS:
        raise ImportFailed(f"{where}: field '{name}' has {len(value)} characters; the limit is {MAX_TEXT_CHARS}")
    return value


def _offset(value: Any, where: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ImportFailed(f"{where}: field '{name}' must be a whole number, got {value!r}")
    return value


def _check_range(text: str, start: int, end: int, quoted: Any, where: str, prefix: str) -> None:
    # An empty span (start == end) is in range and is kept, as a real dump may hold one; spans made
    # in the app are never empty (annotate.services.spans checks that).
    if not 0 <= start <= end <= len(text):
        raise ImportFailed(
            f"{where}: {prefix}_start/{prefix}_end {start}..{end} out of range for a text of {len(text)} characters"
        )
    if quoted is not None and text[start:end] != quoted:
        raise ImportFailed(
            f"{where}: field '{prefix}_span' {quoted!r} does not match the text at {start}..{end}, "
            f"which is {text[start:end]!r}"
        )


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
        raise ImportFailed(f"{where}: field 'annotator_name' must be a non-empty string, got {name!r}")
    try:
        labels = validate_labels(raw["label"], taxonomy)
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
    )


def parse_faithbench(content: bytes | str, file: str, taxonomy: dict[str, Any]) -> ParsedBatch:
    """Parse and check one FaithBench batch file; raises ImportFailed naming what is wrong."""
    try:
        document = json.loads(content)
    except UnicodeDecodeError as error:
        raise ImportFailed(f"{file}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except json.JSONDecodeError as error:
        raise ImportFailed(f"{file}: not valid JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    if not isinstance(document, dict) or not isinstance(document.get("samples"), list):
        raise ImportFailed(f"{file}: expected an object with a list under 'samples'")
    samples: list[ParsedSample] = []
    seen_ids: set[str] = set()
    for index, raw in enumerate(document["samples"]):
        if not isinstance(raw, dict):
            raise ImportFailed(f"{_where(file, index)}: each sample must be an object")
        where = _where(file, index, raw.get("sample_id"))
        for required in ("sample_id", "source", "summary"):
            if required not in raw:
                raise ImportFailed(f"{where}: missing field '{required}'")
        sample_id = raw["sample_id"]
        if isinstance(sample_id, bool) or not isinstance(sample_id, (int, str)):
            raise ImportFailed(f"{where}: field 'sample_id' must be a number or a string")
        if str(sample_id) in seen_ids:
            raise ImportFailed(f"{where}: field 'sample_id' repeats an earlier sample")
        seen_ids.add(str(sample_id))
        source = _text(raw["source"], where, "source")
        summary = _text(raw["summary"], where, "summary")
        metadata = raw.get("metadata", {})
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, dict):
            raise ImportFailed(f"{where}: field 'metadata' must be an object")
        generator = metadata.get("summarizer") or metadata.get("generator") or ""
        if not isinstance(generator, str):
            raise ImportFailed(f"{where}: field 'metadata.summarizer' must be a string")
        kept = {key: raw[key] for key in raw if key not in {"source", "summary", "annotations", "metadata"}}
        kept["has_metadata"] = "metadata" in raw
        kept["has_annotations"] = "annotations" in raw
        sample = ParsedSample(
            passage_key=passage_key_for(source),
            source=source,
            summary=summary,
            generator=generator,
            external_id=str(sample_id),
            metadata=metadata,
            imported_fields=kept,
        )
        annotations = raw.get("annotations") or []
        if not isinstance(annotations, list):
            raise ImportFailed(f"{where}: field 'annotations' must be a list")
        for number, annotation in enumerate(annotations):
            annot_where = f"{where}: annotation #{number}"
            if isinstance(annotation, dict) and "annot_id" in annotation:
                annot_where += f" (annot_id {annotation['annot_id']!r})"
            sample.spans.append(_parse_annotation(annotation, sample, taxonomy, annot_where))
        samples.append(sample)
    stem = Path(file).stem
    roster = document.get("roster")
    if roster is not None and (not isinstance(roster, list) or not all(isinstance(n, str) for n in roster)):
        raise ImportFailed(f"{file}: field 'roster' must be a list of annotator names")
    return ParsedBatch(name=stem, samples=samples, roster=roster)


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
        sample = ParsedSample(
            passage_key=passage_key,
            source=source,
            summary=summary,
            generator=generator,
            external_id=str(raw.get("sample_id", line_number)),
            metadata=metadata,
        )
        if batch is None:
            ungrouped.setdefault(passage_key, []).append(sample)
        else:
            named.setdefault(str(batch), []).append(sample)
    if not named and not ungrouped:
        raise ImportFailed(f"{file}: no samples")
    batches = [ParsedBatch(name=name, samples=samples) for name, samples in named.items()]
    keys = list(ungrouped)
    stem = Path(file).stem
    for number, first in enumerate(range(0, len(keys), passages_per_batch), start=1):
        group = keys[first : first + passages_per_batch]
        samples = [s for key in group for s in ungrouped[key][:summaries_per_passage]]
        overflow = [s for key in group for s in ungrouped[key][summaries_per_passage:]]
        if overflow:
            raise ImportFailed(
                f"{file}: passage {overflow[0].passage_key!r} has more than {summaries_per_passage} summaries; "
                "give those lines a 'batch'"
            )
        batches.append(ParsedBatch(name=f"{stem}-{number}", samples=samples))
    return batches


def _annotator(name: str, cache: dict[str, AbstractBaseUser]) -> AbstractBaseUser:
    """Imported annotators are people matched by name; new ones cannot log in."""
    if name in cache:
        return cache[name]
    User = get_user_model()
    user = User.objects.filter(username=name).first()
    if user is None:
        user = User(username=name)
        user.set_unusable_password()
        user.save()
    cache[name] = user
    return user


@transaction.atomic
def import_batches(
    project: Project,
    batches: Sequence[ParsedBatch],
    *,
    round: int = 1,
    roster: Iterable[str] | None = None,
    created_by: AbstractBaseUser | None = None,
) -> ImportReport:
    """Write parsed batches into a project, then queue sentence splitting and embedding."""
    from annotate.services.embedding import queue_embedding

    names = [batch.name for batch in batches]
    duplicates = {name for name in names if names.count(name) > 1}
    if duplicates:
        raise ImportFailed(f"batch {sorted(duplicates)[0]!r} is given twice")
    existing = set(Batch.objects.filter(project=project, name__in=names).values_list("name", flat=True))
    if existing:
        raise ImportFailed(f"batch {sorted(existing)[0]!r} already exists in project {project.slug!r}")
    passages = {p.external_id: p for p in Passage.objects.filter(project=project)}
    users: dict[str, AbstractBaseUser] = {}
    members = set(Membership.objects.filter(project=project).values_list("user_id", flat=True))
    position = Batch.objects.filter(project=project).count()
    created: list[Batch] = []
    sample_count = span_count = 0
    annotator_names: set[str] = set()
    global_roster = list(roster) if roster is not None else None
    for parsed in batches:
        batch = Batch.objects.create(project=project, name=parsed.name, position=position)
        position += 1
        created.append(batch)
        new_samples: list[Sample] = []
        for index, parsed_sample in enumerate(parsed.samples):
            passage = passages.get(parsed_sample.passage_key)
            if passage is None:
                passage = Passage.objects.create(
                    project=project, external_id=parsed_sample.passage_key, text=parsed_sample.source
                )
                passages[passage.external_id] = passage
            elif passage.text != parsed_sample.source:
                raise ImportFailed(
                    f"batch {parsed.name!r}: sample {parsed_sample.external_id!r}: passage "
                    f"{parsed_sample.passage_key!r} already exists with a different source text"
                )
            new_samples.append(
                Sample(
                    project=project,
                    passage=passage,
                    batch=batch,
                    position=index,
                    external_id=parsed_sample.external_id,
                    summary=parsed_sample.summary,
                    generator=parsed_sample.generator,
                    metadata=parsed_sample.metadata,
                    imported_fields=parsed_sample.imported_fields,
                )
            )
        saved = Sample.objects.bulk_create(new_samples, batch_size=500)
        if any(s.pk is None for s in saved):  # databases that return no ids on bulk insert
            saved = list(Sample.objects.filter(batch=batch).order_by("position"))
        spans: list[SpanAnnotation] = []
        batch_annotators: dict[str, AbstractBaseUser] = {}
        for sample, parsed_sample in zip(saved, parsed.samples, strict=True):
            for parsed_span in parsed_sample.spans:
                user = _annotator(parsed_span.annotator_name, users)
                batch_annotators[parsed_span.annotator_name] = user
                spans.append(
                    SpanAnnotation(
                        sample=sample,
                        annotator=user,
                        round=round,
                        start=parsed_span.start,
                        end=parsed_span.end,
                        text=parsed_span.text,
                        labels=parsed_span.labels,
                        note=parsed_span.note,
                        source_start=parsed_span.source_start,
                        source_end=parsed_span.source_end,
                        source_text=parsed_span.source_text,
                        external_id=parsed_span.external_id,
                        imported_fields=parsed_span.imported_fields,
                    )
                )
        SpanAnnotation.objects.bulk_create(spans, batch_size=1000)
        roster_names = parsed.roster if parsed.roster is not None else global_roster
        if roster_names is not None:
            batch_annotators = {name: _annotator(name, users) for name in roster_names}
        now = timezone.now()
        Assignment.objects.bulk_create(
            [
                Assignment(batch=batch, annotator=user, round=round, status=Assignment.Status.SUBMITTED, submitted_at=now)
                for user in batch_annotators.values()
            ]
        )
        new_members = [u for u in batch_annotators.values() if u.pk not in members]
        Membership.objects.bulk_create(
            [Membership(project=project, user=u, role=Membership.Role.ANNOTATOR) for u in new_members]
        )
        members.update(u.pk for u in new_members)
        annotator_names.update(batch_annotators)
        sample_count += len(saved)
        span_count += len(spans)
    job = queue_embedding(project, created_by=created_by)
    return ImportReport(
        project=project,
        batches=created,
        samples=sample_count,
        spans=span_count,
        annotators=sorted(annotator_names),
        job=job,
    )


def parse_upload(content: bytes, file: str, taxonomy: dict[str, Any]) -> list[ParsedBatch]:
    """Tell the two formats apart by the file name: .jsonl is unannotated samples."""
    if file.lower().endswith(".jsonl"):
        return parse_samples_jsonl(content, file)
    return [parse_faithbench(content, file, taxonomy)]


def import_files(
    project: Project,
    files: Sequence[tuple[str, bytes]],
    *,
    round: int = 1,
    roster: Iterable[str] | None = None,
    created_by: AbstractBaseUser | None = None,
) -> ImportReport:
    """Parse every file first, then write them all in one transaction."""
    parsed: list[ParsedBatch] = []
    for name, content in files:
        parsed.extend(parse_upload(content, name, project.taxonomy))
    return import_batches(project, parsed, round=round, roster=roster, created_by=created_by)
