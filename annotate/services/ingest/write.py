"""Writing parsed batches into a project in one transaction, and the report of what was imported."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.template.defaultfilters import pluralize
from django.utils import timezone

from annotate.models import Assignment, Batch, Job, Membership, Passage, Project, Sample, SpanAnnotation
from annotate.services.ingest.annotators import (
    ANNOTATOR_MATCHING,
    BY_NAME,
    IMPORTED_AS,
    AnnotatorIdConflict,
    CaseMerge,
    ImportedAccounts,
    _check_usernames,
    annotator_id_conflicts,
    annotator_usernames,
    describe_taken_name,
)
from annotate.services.ingest.checks import ImportFailed, ImportProblems, _fits, _shown, username_limit
from annotate.services.ingest.faithbench import parse_faithbench
from annotate.services.ingest.parsed import ParsedBatch
from annotate.services.ingest.samples import parse_samples_jsonl
from annotate.taxonomy import category_of, label_categories


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
    or ``by-id`` (one user per annotator_name and annotator_id). A name only
    ever stands for an existing account that is already a member of the
    project; see ImportedAccounts.

    Without a roster, a batch's annotators (its submitted assignments, which
    every figure reads) are the people with at least one span in it that
    counts: DESIGN.md ignores spans with an empty label list, so such spans
    alone make no one an annotator (who would otherwise add a row of
    Consistent to every sample). Their spans are kept, and their author
    becomes a member, so an export gives them back and a re-import finds them.
    """
    from annotate.services.embedding import queue_embedding

    if annotators not in ANNOTATOR_MATCHING:
        raise ImportFailed(f"annotators: {_shown(annotators)} is not one of {', '.join(ANNOTATOR_MATCHING)}")
    global_roster = list(roster) if roster is not None else None
    for name in global_roster or []:
        _fits(name, username_limit(), f"roster name {_shown(name)}", "roster")
    names = [batch.name for batch in batches]
    duplicates = {name for name in names if names.count(name) > 1}
    if duplicates:
        raise ImportFailed(f"batch {_shown(sorted(duplicates)[0])} is given twice")
    existing = set(Batch.objects.filter(project=project, name__in=names).values_list("name", flat=True))
    if existing:
        raise ImportFailed(f"batch {_shown(sorted(existing)[0])} already exists in project {project.slug!r}")
    usernames = annotator_usernames(batches, annotators)
    _check_usernames(batches, usernames)
    passages = {p.external_id: p for p in Passage.objects.filter(project=project)}
    rosters = [name for parsed in batches for name in parsed.roster or []]
    accounts = ImportedAccounts(project, [*usernames.values(), *(global_roster or []), *rosters])
    members = set(Membership.objects.filter(project=project).values_list("user_id", flat=True))
    position = Batch.objects.filter(project=project).count()
    categories = label_categories(project.taxonomy or {})
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
                    f"batch {_shown(parsed.name)}: sample {_shown(parsed_sample.external_id)}: passage "
                    f"{_shown(parsed_sample.passage_key)} already exists with a different source text"
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
        batch_annotators: dict[str, AbstractBaseUser] = {}  # with a span that counts
        span_authors: dict[str, AbstractBaseUser] = {}  # with any span, ignored ones too
        names_in_batch: dict[str, set[str]] = {}
        for sample, parsed_sample in zip(saved, parsed.samples, strict=True):
            for parsed_span in parsed_sample.spans:
                username = usernames[(parsed_span.annotator_name, parsed_span.annotator_id)]
                user = accounts[username]
                span_authors[username] = user
                # The rule the figures read spans by (annotate.services.stats.readers): no category, ignored.
                if category_of(parsed_span.labels, categories) is not None:
                    batch_annotators[username] = user
                names_in_batch.setdefault(parsed_span.annotator_name, set()).add(username)
                imported_fields = parsed_span.imported_fields
                if user.get_username() != parsed_span.annotator_name:
                    # The export writes the file's own name back for spans matched to another username.
                    imported_fields = {**imported_fields, IMPORTED_AS: user.get_username()}
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
                username: accounts[username]
                for name in roster_names
                for username in sorted(names_in_batch.get(name, {name}))
            }
        now = timezone.now()
        # Two spellings of one name ("Bob", "bob") are one account: one assignment and membership each.
        people = list({user.pk: user for user in batch_annotators.values()}.values())
        authors = list({user.pk: user for user in [*people, *span_authors.values()]}.values())
        Assignment.objects.bulk_create(
            [
                Assignment(batch=batch, annotator=user, round=round, status=Assignment.Status.SUBMITTED, submitted_at=now)
                for user in people
            ]
        )
        new_members = [u for u in authors if u.pk not in members]
        Membership.objects.bulk_create(
            [Membership(project=project, user=u, role=Membership.Role.ANNOTATOR) for u in new_members]
        )
        members.update(u.pk for u in new_members)
        annotator_names.update(user.get_username() for user in people)
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
        conflicts=annotator_id_conflicts(
            batches, {key: accounts.username(planned) or planned for key, planned in usernames.items()}
        ),
        renamed=dict(accounts.renamed),
        case_merges=accounts.case_merges(),
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
    """Parse every file first, then write them all in one transaction.

    The problems of every file are reported together (ImportProblems), as each JSONL file reports all
    of its lines: one upload of several files shows everything to fix.
    """
    parsed: list[ParsedBatch] = []
    problems: list[str] = []
    total = 0
    for name, content in files:
        try:
            parsed.extend(parse_upload(content, name, project.taxonomy))
        except ImportProblems as failure:
            problems.extend(failure.messages)
            total += failure.total
        except ImportFailed as failure:
            problems.append(str(failure))
            total += 1
    if problems:
        raise ImportProblems(problems, total)
    return import_batches(
        project, parsed, round=round, roster=roster, created_by=created_by, annotators=annotators
    )
