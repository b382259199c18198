"""An import checked and turned into rows before anything is written, then written in one short transaction.

Imports are all-or-nothing (DESIGN.md), so the write is one transaction; on
SQLite that transaction holds the database's write lock from BEGIN to COMMIT,
and every other writer (span saves, pair answers, logins, the worker) waits
for it. :func:`prepare_import` therefore does everything that only reads
before it opens: the batch-name and passage checks, who each annotator is
(:class:`ImportedAccounts`), which passages exist, and every row's values
(:class:`PreparedInsert`). :meth:`PreparedImport.write`, inside the
transaction, takes the import's turn on the project (its row lock: imports
into one project write one after the other on PostgreSQL too), repeats the few
checks that another writer could have made stale in the meantime, then inserts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError
from django.utils import timezone

from annotate.models import Assignment, Batch, Membership, Passage, Project, Sample, SpanAnnotation
from annotate.services.ingest.annotators import (
    ANNOTATOR_MATCHING,
    IMPORTED_AS,
    ImportedAccounts,
    _check_usernames,
    annotator_usernames,
)
from annotate.services.ingest.checks import ImportFailed, _fits, _shown, username_limit
from annotate.services.ingest.parsed import ParsedBatch, ParsedSample
from annotate.services.ingest.repeats import (
    highest_sample_id,
    refuse_repeated_samples,
    refuse_repeats_added_since,
    where_in_file,
)
from annotate.services.ingest.rows import PreparedInsert
from annotate.taxonomy import category_of, label_categories

LOOKUP_CHUNK = 500  # keys a lookup query names at once (SQLite limits the parameters of one statement)


def _chunks(values: Sequence[Any]) -> Iterable[Sequence[Any]]:
    return (values[at : at + LOOKUP_CHUNK] for at in range(0, len(values), LOOKUP_CHUNK))


def _account_key(user: AbstractBaseUser) -> tuple[str, int]:
    """One account however it was looked up: its id once saved, the object itself while only planned."""
    return ("saved", user.pk) if user.pk is not None else ("new", id(user))


def _distinct(users: Iterable[AbstractBaseUser]) -> list[AbstractBaseUser]:
    return list({_account_key(user): user for user in users}.values())


@dataclass
class PreparedBatch:
    """One batch's rows, ready to insert once the batch, its new passages and its authors have ids."""

    name: str
    samples: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)  # (passage key, row)
    spans: list[tuple[int, AbstractBaseUser, tuple[Any, ...]]] = field(default_factory=list)  # (position, author, row)
    people: list[AbstractBaseUser] = field(default_factory=list)  # its annotators: a submitted assignment each
    authors: list[AbstractBaseUser] = field(default_factory=list)  # people and span authors: members afterwards


@dataclass
class PreparedImport:
    """Everything an import writes, checked; :meth:`write` runs inside the import's transaction."""

    project: Project
    round: int
    accounts: ImportedAccounts
    usernames: dict[tuple[str, str | None], str]  # planned, by (annotator_name, annotator_id)
    batches: list[PreparedBatch]
    passage_ids: dict[str, int]  # passages of the project the import uses, by key
    new_passages: dict[str, tuple[Any, ...]]  # passages to create, by key: their rows
    passage_rows: PreparedInsert
    sample_rows: PreparedInsert
    span_rows: PreparedInsert
    # The parsed batches and, unless repeats are allowed, the project's highest sample id before the repeat check:
    # write() checks again against the samples added since.
    parsed: Sequence[ParsedBatch] = ()
    repeats_seen: int | None = None

    @property
    def sample_count(self) -> int:
        return sum(len(batch.samples) for batch in self.batches)

    @property
    def span_count(self) -> int:
        return sum(len(batch.spans) for batch in self.batches)

    def annotator_names(self) -> list[str]:
        return sorted({user.get_username() for batch in self.batches for user in batch.people})

    def write(self) -> list[Batch]:
        """Insert every row; call inside a transaction. Refuses (ImportFailed, nothing kept) what another
        writer made impossible since the import was checked: a batch name or a passage id taken, an account
        made under a planned username, a sample another import added (ImportProblems, unless repeats are
        allowed)."""
        _take_turn(self.project)
        _refuse_existing_batches(self.project, [batch.name for batch in self.batches])
        if self.repeats_seen is not None:
            refuse_repeats_added_since(self.project, self.parsed, self.repeats_seen)
        self.accounts.save_new_accounts()
        first_position = Batch.objects.filter(project=self.project).count()
        batches = _create_batches(self.project, [batch.name for batch in self.batches], first_position)
        try:
            self.passage_rows.insert(self.new_passages.values())
        except IntegrityError:  # passage_id_in_project: looking them all up again would hold the lock longer
            raise ImportFailed(
                f"another import added some of this import's passages to project {self.project.slug!r} while this "
                "one was being checked; nothing was imported. Import the files again."
            ) from None
        self.passage_ids.update(_passage_ids(self.project, list(self.new_passages)))
        self.sample_rows.insert(
            (*row, batch.pk, self.passage_ids[key])
            for batch, prepared in zip(batches, self.batches, strict=True)
            for key, row in prepared.samples
        )
        sample_ids = _sample_ids([batch.pk for batch in batches])
        self.span_rows.insert(
            (*row, sample_ids[(batch.pk, position)], author.pk)
            for batch, prepared in zip(batches, self.batches, strict=True)
            for position, author, row in prepared.spans
        )
        self._add_assignments_and_members(batches)
        return batches

    def _add_assignments_and_members(self, batches: list[Batch]) -> None:
        """Each batch's annotators get a submitted assignment; everyone with a span in it becomes a member."""
        now = timezone.now()
        Assignment.objects.bulk_create([
            Assignment(batch=batch, annotator=user, round=self.round, status=Assignment.Status.SUBMITTED,
                       submitted_at=now)
            for batch, prepared in zip(batches, self.batches, strict=True)
            for user in prepared.people
        ])
        members = set(Membership.objects.filter(project=self.project).values_list("user_id", flat=True))
        authors = _distinct(author for batch in self.batches for author in batch.authors)
        new_members = [user for user in authors if user.pk not in members]
        Membership.objects.bulk_create(
            [Membership(project=self.project, user=user, role=Membership.Role.ANNOTATOR) for user in new_members]
        )


def _take_turn(project: Project) -> None:
    """Imports into one project take turns from here to their commit, so that the re-checks see what the import
    before wrote: on PostgreSQL two imports of the same samples would otherwise both pass the repeat check (neither
    sees the other's uncommitted rows) and both be written. The lock is the project's row, which the other writers
    of its samples (the agreement page's selection batches) lock too; NO KEY UPDATE, so that rows referring to the
    project (a job, a membership) are still written meanwhile. SQLite's IMMEDIATE transactions already write one
    at a time."""
    Project.objects.select_for_update(no_key=True).filter(pk=project.pk).exists()


def _refuse_existing_batches(project: Project, names: list[str]) -> None:
    existing = {name for chunk in _chunks(names)
                for name in Batch.objects.filter(project=project, name__in=chunk).values_list("name", flat=True)}
    if existing:
        raise ImportFailed(f"batch {_shown(sorted(existing)[0])} already exists in project {project.slug!r}")


def _passage_ids(project: Project, keys: list[str]) -> dict[str, int]:
    """The project's passages among ``keys``: key -> id."""
    return {
        key: pk
        for chunk in _chunks(keys)
        for key, pk in Passage.objects.filter(project=project, external_id__in=chunk).values_list("external_id", "id")
    }


def _sample_ids(batch_ids: list[int]) -> dict[tuple[int, int], int]:
    """The samples of these batches: (batch id, position) -> id."""
    return {
        (batch_id, position): pk
        for chunk in _chunks(batch_ids)
        for batch_id, position, pk in Sample.objects.filter(batch_id__in=chunk).order_by().values_list(
            "batch_id", "position", "id"
        )
    }


def _existing_passages(project: Project, keys: list[str]) -> dict[str, tuple[int, str]]:
    """The project's passages among ``keys``: key -> (id, text)."""
    return {
        key: (pk, text)
        for chunk in _chunks(keys)
        for key, pk, text in Passage.objects.filter(project=project, external_id__in=chunk).values_list(
            "external_id", "id", "text"
        )
    }


def _create_batches(project: Project, names: list[str], position: int) -> list[Batch]:
    batches = Batch.objects.bulk_create(
        [Batch(project=project, name=name, position=position + offset) for offset, name in enumerate(names)]
    )
    if any(batch.pk is None for batch in batches):  # databases that return no ids on bulk insert
        by_name = {batch.name: batch for batch in Batch.objects.filter(project=project, name__in=names)}
        batches = [by_name[name] for name in names]
    return batches


def prepare_import(
    project: Project,
    batches: Sequence[ParsedBatch],
    *,
    round: int,
    roster: list[str] | None,
    annotators: str,
    allow_repeats: bool = False,
) -> PreparedImport:
    """Check the parsed batches against the project and make every row an import writes; only reads.

    Raises ImportFailed for an unknown ``annotators`` value, a roster name too long, a batch name given twice or
    already in the project, a username too long, or a passage id whose source text differs from the project's;
    and, unless ``allow_repeats``, ImportProblems naming every sample the project holds already or the import
    gives twice (annotate.services.ingest.repeats).
    """
    if annotators not in ANNOTATOR_MATCHING:
        raise ImportFailed(f"annotators: {_shown(annotators)} is not one of {', '.join(ANNOTATOR_MATCHING)}")
    repeats_seen = None if allow_repeats else highest_sample_id(project)  # before the check it bounds
    for name in roster or []:
        _fits(name, username_limit(), f"roster name {_shown(name)}", "roster")
    names = [batch.name for batch in batches]
    duplicates = {name for name in names if names.count(name) > 1}
    if duplicates:
        raise ImportFailed(f"batch {_shown(sorted(duplicates)[0])} is given twice")
    _refuse_existing_batches(project, names)
    usernames = annotator_usernames(batches, annotators)
    _check_usernames(batches, usernames)
    keys = list(dict.fromkeys(sample.passage_key for batch in batches for sample in batch.samples))
    existing = _existing_passages(project, keys)
    rosters = [name for parsed in batches for name in parsed.roster or []]
    prepared = PreparedImport(
        project=project,
        round=round,
        accounts=ImportedAccounts(project, [*usernames.values(), *(roster or []), *rosters]),
        usernames=usernames,
        batches=[],
        passage_ids={key: pk for key, (pk, _) in existing.items()},
        new_passages={},
        passage_rows=PreparedInsert(Passage),
        sample_rows=PreparedInsert(Sample, keys=["batch", "passage"]),
        span_rows=PreparedInsert(SpanAnnotation, keys=["sample", "annotator"]),
        parsed=batches,
        repeats_seen=repeats_seen,
    )
    texts = {key: text for key, (_, text) in existing.items()}
    categories = label_categories(project.taxonomy or {})
    for parsed in batches:
        batch = PreparedBatch(name=parsed.name)
        for position, sample in enumerate(parsed.samples):
            _check_passage(prepared, texts, parsed, sample, position)
            batch.samples.append((sample.passage_key, prepared.sample_rows.prepare(
                project=project.pk, position=position, external_id=sample.external_id, summary=sample.summary,
                generator=sample.generator, metadata=sample.metadata, imported_fields=sample.imported_fields,
            )))
        _prepare_spans(prepared, batch, parsed, usernames, categories, roster)
        prepared.batches.append(batch)
    if not allow_repeats:  # last: a file's own faults are named first, and only a sound import is asked about
        refuse_repeated_samples(project, batches)
    return prepared


def _check_passage(
    prepared: PreparedImport, texts: dict[str, str], parsed: ParsedBatch, sample: ParsedSample, position: int
) -> None:
    """A sample's passage is the project's (same source text), or a new one this import creates."""
    known = texts.get(sample.passage_key)
    if known is None:
        texts[sample.passage_key] = sample.source
        prepared.new_passages[sample.passage_key] = prepared.passage_rows.prepare(
            project=prepared.project.pk, external_id=sample.passage_key, text=sample.source
        )
    elif known != sample.source:
        raise ImportFailed(
            f"{where_in_file(parsed, position, sample)}: field 'source': passage {_shown(sample.passage_key)} "
            "already exists with a different source text (in the project, or from an earlier file of this import); "
            "a passage_id names one source text"
        )


def _prepare_spans(
    prepared: PreparedImport,
    batch: PreparedBatch,
    parsed: ParsedBatch,
    usernames: dict[tuple[str, str | None], str],
    categories: dict[str, str],
    roster: list[str] | None,
) -> None:
    """The batch's span rows, and who its annotators and members are.

    Without a roster a batch's annotators are the people with a span that counts: the rule the figures read
    spans by (annotate.services.stats.readers), no category, ignored. By id, a roster name stands for each of
    its users with spans in this batch.
    """
    accounts = prepared.accounts
    annotators: dict[str, AbstractBaseUser] = {}  # with a span that counts
    authors: dict[str, AbstractBaseUser] = {}  # with any span, ignored ones too
    names_in_batch: dict[str, set[str]] = {}
    for position, sample in enumerate(parsed.samples):
        for span in sample.spans:
            username = usernames[(span.annotator_name, span.annotator_id)]
            user = accounts[username]
            authors[username] = user
            if category_of(span.labels, categories) is not None:
                annotators[username] = user
            names_in_batch.setdefault(span.annotator_name, set()).add(username)
            imported_fields = span.imported_fields
            if user.get_username() != span.annotator_name:
                # The export writes the file's own name back for spans matched to another username.
                imported_fields = {**imported_fields, IMPORTED_AS: user.get_username()}
            batch.spans.append((position, user, prepared.span_rows.prepare(
                round=prepared.round, start=span.start, end=span.end, text=span.text, labels=span.labels,
                note=span.note, source_start=span.source_start, source_end=span.source_end,
                source_text=span.source_text, external_id=span.external_id, imported_fields=imported_fields,
            )))
    roster_names = parsed.roster if parsed.roster is not None else roster
    if roster_names is not None:
        annotators = {
            username: accounts[username]
            for name in roster_names
            for username in sorted(names_in_batch.get(name, {name}))
        }
    # Two spellings of one name ("Bob", "bob") are one account: one assignment and membership each.
    batch.people = _distinct(annotators.values())
    batch.authors = _distinct([*batch.people, *authors.values()])
