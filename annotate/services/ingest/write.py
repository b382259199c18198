"""Writing parsed batches into a project in one transaction, and the report of what was imported."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.template.defaultfilters import pluralize

from annotate.imported_json import is_zip
from annotate.models import Assignment, Batch, Job, Passage, Project, Sample, SpanAnnotation
from annotate.services.ingest.annotators import (
    BY_NAME,
    AnnotatorIdConflict,
    CaseMerge,
    annotator_id_conflicts,
    describe_taken_name,
)
from annotate.services.ingest.archives import UnpackBudget, unpacked
from annotate.services.ingest.checks import ImportFailed, ImportProblems, _shown
from annotate.services.ingest.faithbench import TOP_LEVEL_FIELDS, parse_faithbench
from annotate.services.ingest.parsed import ParsedBatch
from annotate.services.ingest.prepare import prepare_import
from annotate.services.ingest.samples import SAMPLE_FIELDS, parse_samples_jsonl
from annotate.services.ingest.unknown import DefinedFields, UnknownField, UnknownFields, describe_unknown_fields
from annotate.services.planner import analyze_after_commit


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
    # Planned username -> the new account's username, where an account outside the project held the name.
    renamed: dict[str, str] = field(default_factory=dict)
    # Spellings that went to one account only because usernames are compared ignoring case.
    case_merges: list[CaseMerge] = field(default_factory=list)
    # Samples JSONL lines that carried annotations (a JSONL export's lines do), and how many: that format imports
    # the samples only.
    lines_with_annotations: int = 0
    unread_annotations: int = 0
    # Fields the files' format does not define (samples JSONL lines, FaithBench top-level keys), not imported.
    unknown_fields: list[UnknownField] = field(default_factory=list)

    def counts(self) -> list[str]:
        """["1 batch", "12 samples", "1 span"]: each noun agrees with its number ("Imported 1 batches" did not)."""
        return [
            f"{count} {noun}{pluralize(count, suffix)}"
            for count, noun, suffix in ((len(self.batches), "batch", "es"), (self.samples, "sample", "s"),
                                        (self.spans, "span", "s"))
        ]

    def describe_renamed(self) -> list[str]:
        return [describe_taken_name(planned, username) for planned, username in sorted(self.renamed.items())]

    def describe_case_merges(self) -> list[str]:
        return [merge.describe() for merge in self.case_merges]

    def describe_unread_annotations(self) -> list[str]:
        """What a samples JSONL import left out: the annotations its lines carried, which that format does not read
        (a JSONL export's lines carry them, under names and rounds of the project they came from)."""
        if not self.unread_annotations:
            return []
        lines, count = self.lines_with_annotations, self.unread_annotations
        return [
            f"{lines} line{pluralize(lines)} carried annotations ({count} in all), which the samples JSONL format "
            f"does not import: {'its sample was' if lines == 1 else 'their samples were'} imported without them. "
            "FaithBench batch files carry annotations: to bring them in, import the project's FaithBench export "
            "(format faithbench) into a new project instead."
        ]

    def describe_unknown_fields(self) -> list[str]:
        """Each field the files' format does not define, which was not imported: how many lines (or files) had it
        and where it was first seen."""
        return describe_unknown_fields(self.unknown_fields)

    def describe(self) -> str:
        """What was imported, as the project page and the API say it."""
        counts = self.counts()
        said = f"imported {', '.join(counts[:-1])} and {counts[-1]}"
        if self.job is not None and self.job.status == Job.Status.FAILED:  # warnings() says why
            return f"{said}; sentence embedding could not be started"
        return f"{said}; sentence embedding runs in the background"

    def warnings(self) -> list[str]:
        """What the importer should check, as the project page and the API say it: annotator names that carry
        several ids, annotations and fields the files' format does not import, usernames taken outside the project,
        spellings merged ignoring case, and an embedding job the broker refused (the texts are imported; the job says
        what to check)."""
        lines = []
        for conflict in self.conflicts:
            # The same project refuses these batches a second time, so the advice names a new one.
            hint = (
                " If they are different people, import again matching annotators by id. Import into a new "
                "project: this one now holds these batches, and a project takes each batch name once."
                if conflict.merged else ""
            )
            lines.append(f"{conflict.describe()}{hint}")
        if self.job is not None and self.job.status == Job.Status.FAILED:  # the broker refused the embedding job
            lines.append(f"Sentence embedding not started: {self.job.error}")
        return [*lines, *self.describe_unread_annotations(), *self.describe_unknown_fields(), *self.describe_renamed(),
                *self.describe_case_merges()]


def import_batches(
    project: Project,
    batches: Sequence[ParsedBatch],
    *,
    round: int = 1,
    roster: Iterable[str] | None = None,
    created_by: AbstractBaseUser | None = None,
    annotators: str = BY_NAME,
    allow_repeats: bool = False,
) -> ImportReport:
    """Write parsed batches into a project, then queue sentence splitting and embedding.

    ``annotators`` says who is who: ``by-name`` (one user per annotator_name)
    or ``by-id`` (one user per annotator_name and annotator_id). A name only
    ever stands for an existing account that is already a member of the
    project; see ImportedAccounts.

    Without a roster, a batch's annotators (its submitted assignments, which
    every figure reads) are the people with at least one span in it that
    counts: DESIGN.md ignores spans with an empty label list, so such spans
    alone make no one an annotator (who would otherwise add a row of
    Consistent to every sample). Their spans are kept, and their author
    becomes a member, so an export gives them back and a re-import finds them.

    A sample the project holds already, or that the import gives twice (the same source, summary and
    generator: annotate.services.ingest.repeats), is refused, every one named, unless ``allow_repeats``: the
    same samples under another file name would otherwise count twice in every figure.

    All or nothing, in one transaction that only inserts rows checked and
    prepared before it opens (annotate.services.ingest.prepare): on SQLite the
    transaction holds the database's write lock, which every other writer waits for.
    """
    from annotate.services.embedding import queue_embedding

    prepared = prepare_import(
        project, batches, round=round, roster=list(roster) if roster is not None else None, annotators=annotators,
        allow_repeats=allow_repeats,
    )
    with transaction.atomic():
        created = prepared.write()
        analyze_after_commit(Sample, Passage, SpanAnnotation, Assignment)
        job = queue_embedding(project, created_by=created_by)
    accounts = prepared.accounts
    return ImportReport(
        project=project,
        batches=created,
        samples=prepared.sample_count,
        spans=prepared.span_count,
        annotators=prepared.annotator_names(),
        job=job,
        matching=annotators,
        conflicts=annotator_id_conflicts(
            batches, {key: accounts.username(planned) or planned for key, planned in prepared.usernames.items()}
        ),
        renamed=dict(accounts.renamed),
        case_merges=accounts.case_merges(),
        lines_with_annotations=sum(1 for batch in batches for sample in batch.samples if sample.unread_annotations),
        unread_annotations=sum(sample.unread_annotations for batch in batches for sample in batch.samples),
        unknown_fields=_unknown_fields(batches),
    )


def _unknown_fields(batches: Sequence[ParsedBatch]) -> list[UnknownField]:
    """The fields the batches' files gave that their format does not define, each first seen in file and line
    order (a samples JSONL file's lines are spread over several batches)."""
    files: dict[str, int] = {}
    found: list[tuple[int, int, DefinedFields, tuple[str, ...], str]] = []  # (file, line, format, names, where)
    for batch in batches:
        rank = files.setdefault(batch.file, len(files))
        if batch.unknown_keys:
            found.append((rank, 0, TOP_LEVEL_FIELDS, batch.unknown_keys, batch.file))
        found.extend((rank, sample.line or 0, SAMPLE_FIELDS, sample.unknown_fields, f"{batch.file}: line {sample.line}")
                     for sample in batch.samples if sample.unknown_fields)
    unknown = UnknownFields()
    for _, _, defined, names, where in sorted(found, key=lambda place: place[:2]):
        unknown.note(defined, names, where)
    return unknown.fields()


# The formats a span project imports: FaithBench batch files, and unannotated samples a JSON object a line.
FORMATS: tuple[str, ...] = ("faithbench", "jsonl")


def format_of(file: str) -> str:
    """The format the project page reads a file in, told by its name: .jsonl is unannotated samples."""
    return "jsonl" if file.lower().endswith(".jsonl") else "faithbench"


def parse_upload(content: bytes, file: str, taxonomy: dict[str, Any], fmt: str | None = None) -> list[ParsedBatch]:
    """Read one file in ``fmt`` (None: told by the file's name, as the page does; the API names it)."""
    fmt = fmt or format_of(file)
    if fmt not in FORMATS:
        raise ImportFailed(f"format: {_shown(fmt)} is not one of {', '.join(FORMATS)}")
    if fmt == "jsonl":
        return parse_samples_jsonl(content, file)
    return [parse_faithbench(content, file, taxonomy)]


def parse_roster(text: str) -> list[str] | None:
    """The import form's roster ("Ana, Bo, Cy": who annotated every batch), or None when it names nobody."""
    return [name.strip() for name in text.split(",") if name.strip()] or None


def import_files(
    project: Project,
    files: Sequence[tuple[str, bytes]],
    *,
    round: int = 1,
    roster: Iterable[str] | None = None,
    created_by: AbstractBaseUser | None = None,
    annotators: str = BY_NAME,
    fmt: str | None = None,
    allow_repeats: bool = False,
) -> ImportReport:
    """Parse every file first, then write them all in one transaction.

    The problems of every file are reported together (ImportProblems), as each JSONL file reports all
    of its lines: one upload of several files shows everything to fix. ``fmt`` is one of FORMATS for
    every file, or None to tell each file's format by its name (the project page). A zip archive is
    read as the files it holds (annotate.services.ingest.archives).
    """
    if fmt is not None and fmt not in FORMATS:
        raise ImportFailed(f"format: {_shown(fmt)} is not one of {', '.join(FORMATS)}")
    parsed: list[ParsedBatch] = []
    problems: list[str] = []
    total = 0
    budget = UnpackBudget.for_upload()
    for name, content in files:
        try:
            # A zip archive (a FaithBench export's download) is the files it holds.
            members = unpacked(name, content, budget) if is_zip(content) else [(name, content)]
        except ImportFailed as failure:
            total += _noted(failure, problems)
            continue
        for member, member_content in members:
            try:
                parsed.extend(parse_upload(member_content, member, project.taxonomy, fmt))
            except ImportFailed as failure:
                total += _noted(failure, problems)
    if problems:
        raise ImportProblems(problems, total)
    return import_batches(
        project, parsed, round=round, roster=roster, created_by=created_by, annotators=annotators,
        allow_repeats=allow_repeats,
    )


def _noted(failure: ImportFailed, problems: list[str]) -> int:
    """Add a file's refusal to ``problems``; how many problems it counts (ImportProblems lists some of them)."""
    if isinstance(failure, ImportProblems):
        problems.extend(failure.messages)
        return failure.total
    problems.append(str(failure))
    return 1
