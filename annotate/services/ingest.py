"""Importing samples: FaithBench batch files and a simple JSONL of unannotated samples.

Imports are all-or-nothing: every file is parsed and checked before the first
row is written, and the writes run in one transaction. Every error names the
file, the sample and the field. Values bound for length-limited columns
(names, ids, generators) are checked against the column's limit here, so an
over-long value is the same clear error on every database.

Annotators: FaithBench's ``annotator_id`` is local to a batch, so people are
matched by ``annotator_name`` by default (``by-name``). Different people who
share a name ("New User") then become one annotator; the report lists every
name that carries several ids so the importer can choose ``by-id`` instead:
one user per (name, annotator_id), named e.g. "New User (a3ac)".
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
from django.db import models, transaction
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
# The username an annotation was matched to when it differs from its annotator_name (by-id), so that an
# export writes the file's own name back.
IMPORTED_AS = "_imported_as"
BY_NAME, BY_ID = "by-name", "by-id"
ANNOTATOR_MATCHING = (BY_NAME, BY_ID)
SHORT_ID = 4  # characters of an annotator_id in a by-id username, more when two ids of a name share them


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


@dataclass
class ParsedBatch:
    name: str
    samples: list[ParsedSample]
    roster: list[str] | None = None
    file: str = ""


@dataclass(frozen=True)
class AnnotatorIdConflict:
    """One annotator_name that carries several annotator_ids: several people, or one person in several batches."""

    name: str
    files_by_id: dict[str, list[str]]  # annotator_id -> the files it occurs in
    usernames: list[str]  # who the import made of them: one user by name, one per id by id

    def describe(self) -> str:
        ids = "; ".join(f"{annotator_id!r} in {', '.join(files)}" for annotator_id, files in self.files_by_id.items())
        said = f"annotator name {self.name!r} carries {len(self.files_by_id)} different annotator_ids ({ids})"
        if self.merged:
            return f"{said}: imported as one annotator, {self.usernames[0]!r}."
        return f"{said}: kept apart as {', '.join(repr(name) for name in self.usernames)}."

    @property
    def merged(self) -> bool:
        return len(self.usernames) == 1


@dataclass
class ImportReport:
    project: Project
    batches: list[Batch]
    samples: int
    spans: int
    annotators: list[str]
    job: Job | None
    matching: str = BY_NAME
    conflicts: list[AnnotatorIdConflict] = field(default_factory=list)


def max_length(model: type[models.Model], name: str) -> int:
    limit = model._meta.get_field(name).max_length
    assert limit is not None, f"{model.__name__}.{name} has no max_length"
    return limit


def username_limit() -> int:
    User = get_user_model()
    return max_length(User, User.USERNAME_FIELD)


def _fits(value: str, limit: int, where: str, name: str) -> str:
    """The value, or ImportFailed when its column cannot hold it (checked here, not by the database)."""
    if len(value) > limit:
        raise ImportFailed(f"{where}: field '{name}' has {len(value)} characters; the limit is {limit}")
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _where(file: str, index: int, sample_id: Any = None) -> str:
    label = f"sample {_shown(sample_id)} (#{index})" if sample_id is not None else f"sample #{index}"
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
    _fits(name.strip(), username_limit(), where, "annotator_name")
    annotator_id = raw.get("annotator_id")
    if annotator_id is not None and (isinstance(annotator_id, bool) or not isinstance(annotator_id, (str, int))):
        raise ImportFailed(f"{where}: field 'annotator_id' must be a string, a number or null")
    if "annot_id" in raw:
        _fits(str(raw["annot_id"]), max_length(SpanAnnotation, "external_id"), where, "annot_id")
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
        annotator_id=str(annotator_id) if annotator_id is not None and str(annotator_id) != "" else None,
        origin=where,
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
        generator_field = "metadata.summarizer" if metadata.get("summarizer") else "metadata.generator"
        generator = metadata.get("summarizer") or metadata.get("generator") or ""
        if not isinstance(generator, str):
            raise ImportFailed(f"{where}: field '{generator_field}' must be a string")
        _fits(generator, max_length(Sample, "generator"), where, generator_field)
        _fits(str(sample_id), max_length(Sample, "external_id"), where, "sample_id")
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
                annot_where += f" (annot_id {_shown(annotation['annot_id'])})"
            sample.spans.append(_parse_annotation(annotation, sample, taxonomy, annot_where))
        samples.append(sample)
    stem = Path(file).stem
    if len(stem) > max_length(Batch, "name"):
        raise ImportFailed(
            f"{file}: the batch name (the file name without its extension) has {len(stem)} characters; "
            f"the limit is {max_length(Batch, 'name')}"
        )
    roster = document.get("roster")
    if roster is not None and (not isinstance(roster, list) or not all(isinstance(n, str) for n in roster)):
        raise ImportFailed(f"{file}: field 'roster' must be a list of annotator names")
    for name in roster or []:
        _fits(name, username_limit(), f"{file}: roster name {_shown(name)}", "roster")
    return ParsedBatch(name=stem, samples=samples, roster=roster, file=file)


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


def _annotator(username: str, cache: dict[str, AbstractBaseUser]) -> AbstractBaseUser:
    """Imported annotators are people matched by username; new ones cannot log in."""
    if username in cache:
        return cache[username]
    User = get_user_model()
    user = User.objects.filter(username=username).first()
    if user is None:
        user = User(username=username)
        user.set_unusable_password()
        user.save()
    cache[username] = user
    return user


def _short_ids(ids: Sequence[str]) -> dict[str, str]:
    """Each id cut to SHORT_ID characters, or to as many as it takes to tell it from the others."""
    shorts = {}
    for annotator_id in ids:
        others = [other for other in ids if other != annotator_id]
        length = SHORT_ID
        while length < len(annotator_id) and any(other[:length] == annotator_id[:length] for other in others):
            length += 1
        shorts[annotator_id] = annotator_id[:length]
    return shorts


def annotator_usernames(batches: Sequence[ParsedBatch], matching: str) -> dict[tuple[str, str | None], str]:
    """The username of every (annotator_name, annotator_id) of the batches.

    by-name: the name. by-id: "name (short id)", one user per id; an annotation
    without an id keeps the bare name.
    """
    ids_by_name: dict[str, set[str]] = {}
    for batch in batches:
        for sample in batch.samples:
            for span in sample.spans:
                ids = ids_by_name.setdefault(span.annotator_name, set())
                if span.annotator_id is not None:
                    ids.add(span.annotator_id)
    usernames: dict[tuple[str, str | None], str] = {}
    for name, ids in ids_by_name.items():
        usernames[(name, None)] = name
        shorts = _short_ids(sorted(ids)) if matching == BY_ID else {}
        for annotator_id in ids:
            usernames[(name, annotator_id)] = f"{name} ({shorts[annotator_id]})" if matching == BY_ID else name
    return usernames


def annotator_id_conflicts(
    batches: Sequence[ParsedBatch], usernames: dict[tuple[str, str | None], str]
) -> list[AnnotatorIdConflict]:
    """Every annotator name that carries more than one annotator_id, with the files each id is in."""
    files: dict[str, dict[str, list[str]]] = {}
    for batch in batches:
        for sample in batch.samples:
            for span in sample.spans:
                if span.annotator_id is not None:
                    where = files.setdefault(span.annotator_name, {}).setdefault(span.annotator_id, [])
                    if batch.file not in where:
                        where.append(batch.file)
    return [
        AnnotatorIdConflict(
            name=name,
            files_by_id=dict(sorted(by_id.items())),
            usernames=sorted({usernames[(name, annotator_id)] for annotator_id in by_id}),
        )
        for name, by_id in sorted(files.items())
        if len(by_id) > 1
    ]


def _check_usernames(batches: Sequence[ParsedBatch], usernames: dict[tuple[str, str | None], str]) -> None:
    """A by-id username is longer than the name it comes from: it must still fit the username column."""
    limit = username_limit()
    for batch in batches:
        for sample in batch.samples:
            for span in sample.spans:
                username = usernames[(span.annotator_name, span.annotator_id)]
                if len(username) > limit:
                    raise ImportFailed(
                        f"{span.origin}: field 'annotator_name' with its annotator_id makes the username "
                        f"{_shown(username)} of {len(username)} characters; the limit is {limit}"
                    )


@transaction.atomic
def import_batches(
    project: Project,
    batches: Sequence[ParsedBatch],
    *,
    round: int = 1,
    roster: Iterable[str] | None = None,
    created_by: AbstractBaseUser | None = None,
    annotators: str = BY_NAME,
) -> ImportReport:
    """Write parsed batches into a project, then queue sentence splitting and embedding.

    ``annotators`` says who is who: ``by-name`` (one user per annotator_name)
    or ``by-id`` (one user per annotator_name and annotator_id).
    """
    from annotate.services.embedding import queue_embedding

    if annotators not in ANNOTATOR_MATCHING:
        raise ImportFailed(f"annotators: {annotators!r} is not one of {', '.join(ANNOTATOR_MATCHING)}")
    global_roster = list(roster) if roster is not None else None
    for name in global_roster or []:
        _fits(name, username_limit(), f"roster name {_shown(name)}", "roster")
    names = [batch.name for batch in batches]
    duplicates = {name for name in names if names.count(name) > 1}
    if duplicates:
        raise ImportFailed(f"batch {sorted(duplicates)[0]!r} is given twice")
    existing = set(Batch.objects.filter(project=project, name__in=names).values_list("name", flat=True))
    if existing:
        raise ImportFailed(f"batch {sorted(existing)[0]!r} already exists in project {project.slug!r}")
    usernames = annotator_usernames(batches, annotators)
    _check_usernames(batches, usernames)
    passages = {p.external_id: p for p in Passage.objects.filter(project=project)}
    users: dict[str, AbstractBaseUser] = {}
    members = set(Membership.objects.filter(project=project).values_list("user_id", flat=True))
    position = Batch.objects.filter(project=project).count()
    created: list[Batch] = []
    sample_count = span_count = 0
    annotator_names: set[str] = set()
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
        names_in_batch: dict[str, set[str]] = {}
        for sample, parsed_sample in zip(saved, parsed.samples, strict=True):
            for parsed_span in parsed_sample.spans:
                username = usernames[(parsed_span.annotator_name, parsed_span.annotator_id)]
                user = _annotator(username, users)
                batch_annotators[username] = user
                names_in_batch.setdefault(parsed_span.annotator_name, set()).add(username)
                imported_fields = parsed_span.imported_fields
                if username != parsed_span.annotator_name:
                    imported_fields = {**imported_fields, IMPORTED_AS: username}
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
                        imported_fields=imported_fields,
                    )
                )
        SpanAnnotation.objects.bulk_create(spans, batch_size=1000)
        roster_names = parsed.roster if parsed.roster is not None else global_roster
        if roster_names is not None:
            # A roster names people: by id, a name stands for each of its users with spans in this batch.
            batch_annotators = {
                username: _annotator(username, users)
                for name in roster_names
                for username in sorted(names_in_batch.get(name, {name}))
            }
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
        matching=annotators,
        conflicts=annotator_id_conflicts(batches, usernames),
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
    annotators: str = BY_NAME,
) -> ImportReport:
    """Parse every file first, then write them all in one transaction."""
    parsed: list[ParsedBatch] = []
    for name, content in files:
        parsed.extend(parse_upload(content, name, project.taxonomy))
    return import_batches(
        project, parsed, round=round, roster=roster, created_by=created_by, annotators=annotators
    )
