"""Checking parsed pairs against the project and writing them in one short transaction.

On SQLite the import's transaction holds the database's write lock from BEGIN
to COMMIT, and every other writer (pair answers, span saves, logins, the
worker) waits for it (docs/performance.md, section 3b). So, as the span import
does (annotate.services.ingest.prepare), everything that only reads runs
before it opens: parsing, the checks against the project, and every row's
values (PreparedInsert). Inside, the transaction re-checks only what another
writer could have changed meanwhile (ids, groups and HaDes rows added to the
project since the checks read it: the rows above the highest ids read before
them, one query each), creates the project when it is new, and inserts.
Imports into one project take turns for that (_take_turn): on PostgreSQL a
second import waits for the first's commit, so its re-check sees the first's
rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, models, transaction
from django.db.models import Max
from django.template.defaultfilters import pluralize
from django.utils import timezone

from annotate.models import PairConfig, PairItem, PairOriginal, PerturbedText, Project
from annotate.services import projects
from annotate.services.ingest.rows import PreparedInsert
from annotate.services.pairs.ingest.guess import FORMAT_NAMES, likely_format
from annotate.services.pairs.ingest.hades import parse_hades
from annotate.services.pairs.ingest.lines import Line, PairImportFailed, Problems, read_lines
from annotate.services.pairs.ingest.pairs import parse_pairs
from annotate.services.pairs.ingest.parsed import ParsedImport
from annotate.services.pairs.ingest.raw import parse_raw
from annotate.services.pairs.ingest.repeats import (
    find_repeats,
    find_repeats_added_since,
    line_ranges,
    without_items,
)
from annotate.services.planner import analyze_after_commit

FORMATS: tuple[str, ...] = ("pairs", "hades", "raw")
PARSERS = {"pairs": parse_pairs, "hades": parse_hades, "raw": parse_raw}
IN_CHUNK = 500  # ids per `IN (...)` query: well under SQLite's limit on query parameters


@dataclass
class ImportReport:
    project: Project
    format: str
    created_project: bool
    originals: int
    perturbed_texts: int
    items: int
    labelled: int
    pool: int
    # Rows left out under skip_existing (already in the project), in file order.
    skipped: list[Line] = field(default_factory=list)
    # Of the labelled items, those whose label is their line's exported consensus (consensus_as_label).
    labelled_from_consensus: int = 0
    # Pair lines whose exported consensus H or N was not imported (consensus_as_label off), in file order.
    unread_consensus: list[Line] = field(default_factory=list)

    def describe(self) -> str:
        made = " (new project)" if self.created_project else ""
        if self.format == "raw":
            return f"imported {self.originals} text{pluralize(self.originals)} to perturb into {self.project.slug!r}{made}"
        text = (
            f"imported {self.items} item{pluralize(self.items)} ({self.labelled} labelled, {self.pool} in the pool) "
            f"in {self.perturbed_texts} perturbed text{pluralize(self.perturbed_texts)}, {self.originals} "
            f"original{pluralize(self.originals)}, into {self.project.slug!r}{made}"
        )
        if self.labelled_from_consensus:
            count = self.labelled_from_consensus
            text += f"; {count} label{pluralize(count)} taken from the lines' consensus"
        if self.skipped:
            count = len(self.skipped)
            text += (f"; left out {count} row{'' if count == 1 else 's'} already imported "
                     f"({line_ranges(self.skipped)})")
        return text

    def warnings(self) -> list[str]:
        """What the importer should check, as the project page, the API's ``warnings`` and the command say it: the
        exported consensus the lines carried that was not imported (consensus_as_label was off)."""
        if not self.unread_consensus:
            return []
        count, first = len(self.unread_consensus), self.unread_consensus[0]
        return [
            f"{count} line{pluralize(count)} carried a consensus (H or N, from judging in the project the file was "
            f"exported from) that was not imported, the first {first.where}: "
            f"{'its item is' if count == 1 else 'their items are'} in the pool, to be judged again. To keep each "
            "consensus as its item's label, import the file again into a new project with the option "
            "consensus_as_label (import_pairs --consensus-as-label; on the import form, 'Take each exported "
            "consensus as the item's label'). Votes are never imported, with the option or without it: figures such "
            "as pair_agreement start afresh."
        ]


def _project(project_or_slug: Project | str, problems: Problems) -> Project | None:
    """The existing project, or None when a pairs project of that slug is to be created."""
    if isinstance(project_or_slug, Project):
        project: Project | None = project_or_slug
    else:
        project = Project.objects.filter(slug=project_or_slug).first()
    if project is None:
        try:
            projects.check_project_slug(str(project_or_slug))
        except projects.ProjectError as error:
            problems.add(f"project: {error}")
        return None
    if project.kind != Project.Kind.PAIRS:
        problems.add(
            f"project: {project.slug!r} is a {project.get_kind_display().lower()} project; pairs import only into "
            "a pairs project (give a new slug to create one)"
        )
    return project


def _existing(model: type[models.Model], project: Project, name: str, values: Iterable[str]) -> set[str]:
    wanted = sorted(set(values))
    found: set[str] = set()
    for first in range(0, len(wanted), IN_CHUNK):
        chunk = wanted[first : first + IN_CHUNK]
        found.update(model.objects.filter(project=project, **{f"{name}__in": chunk}).values_list(name, flat=True))
    return found


@dataclass(frozen=True)
class HighestIds:
    """The project's highest ids in the pair tables, read before the checks: a row of it above them was added after
    the checks.

    Per project, as the span import's repeat re-check reads them (annotate.services.ingest.repeats.highest_sample_id):
    an import into this project writes its rows while it holds its turn (_take_turn), so no import's rows committed
    after this read have a lower id. Across all projects they could: an import into another project that takes its
    ids after one into this project but commits first lifts the highest id over this project's rows still
    uncommitted, and the re-check looked only above it."""

    original: int
    text: int
    item: int

    @classmethod
    def read(cls, project: Project) -> HighestIds:
        return cls(*(model.objects.filter(project=project).aggregate(highest=Max("pk"))["highest"] or 0
                     for model in (PairOriginal, PerturbedText, PairItem)))


def _check_against_project(project: Project, parsed: ParsedImport, problems: Problems) -> None:
    """Ids and groups already in the project: imports add rows, they never merge into or overwrite old ones."""
    _report_taken(
        project, parsed, problems,
        originals=_existing(PairOriginal, project, "external_id", parsed.originals),
        groups=_existing(PerturbedText, project, "group", (t.group for t in parsed.texts if t.group)),
        item_ids=_existing(PairItem, project, "external_id", (i.external_id for i in parsed.items if i.external_id)),
    )


def _recheck_added_since(project: Project, parsed: ParsedImport, fmt: str, seen: HighestIds) -> None:
    """Inside the transaction: the checks again, against only the rows another writer added since they ran (one
    query a table, whatever the import's size). Refuses with the messages the checks give."""
    problems = Problems()
    _report_taken(
        project, parsed, problems,
        originals=set(PairOriginal.objects.filter(project=project, pk__gt=seen.original)
                      .values_list("external_id", flat=True)),
        groups=set(PerturbedText.objects.filter(project=project, pk__gt=seen.text).exclude(group="")
                   .values_list("group", flat=True)),
        item_ids=set(PairItem.objects.filter(project=project, pk__gt=seen.item).exclude(external_id="")
                     .values_list("external_id", flat=True)),
    )
    if fmt == "hades":
        # Also under skip_existing: leaving these out now would mean preparing the rows again with the lock held.
        repeats = find_repeats_added_since(project, parsed, fmt, seen.item)
        for repeat in repeats.rows:
            problems.add(repeat.message, repeat.line.at)
        problems.already_imported = len(repeats.rows)
    problems.raise_if_any()


def _create_project(slug: str, user: AbstractBaseUser | None) -> Project:
    """The new project; refused when another import, still uncommitted when create_project looked, made it first."""
    try:
        return projects.create_project(slug, slug=slug, owner=user, kind=Project.Kind.PAIRS)
    except IntegrityError:  # PostgreSQL: the slug's unique index waited for the other import's commit
        raise PairImportFailed([
            f"project: another import created project {slug!r} while this one was being checked; nothing was "
            "imported. Import the files again to add them to it."
        ]) from None


def _take_turn(project: Project) -> None:
    """Imports into one project take turns from here to their commit, so that the re-check sees what the one before
    wrote. Only original ids have a unique constraint; without the turn, two PostgreSQL imports with the same group
    or item id would both pass the re-check (neither sees the other's uncommitted rows) and both be written. The
    lock is the project's settings row (made here for a project older than pairs settings; a new project gets it
    from create_project): no other writer holds it for long. SQLite needs none of this (one write transaction at a
    time) and ignores the lock."""
    PairConfig.objects.select_for_update(no_key=True).get_or_create(project=project)


def _report_taken(
    project: Project, parsed: ParsedImport, problems: Problems, *, originals: set[str], groups: set[str],
    item_ids: set[str],
) -> None:
    """A problem for each original id, group and item id of ``parsed`` that the project has (given, found).

    An item id the project has first: the file (or these lines of it) was
    most likely imported before, and that is said on each such line. The
    group and the original id (made from the item id when the line gives
    none) of those lines are then taken for the same reason, so they are not
    reported again: only a group or original with a new item is.
    """
    slug = project.slug
    taken_texts: dict[int, bool] = {}  # text index -> every item of it has an id the project has
    for item in parsed.items:
        taken = bool(item.external_id) and item.external_id in item_ids
        taken_texts[item.text_index] = taken_texts.get(item.text_index, True) and taken
        if taken:
            assert item.line is not None
            problems.add(f"{item.line.where}: field 'item_id' {item.external_id!r} is already in project {slug!r} "
                         "(imported before?)", item.line.at)
    taken_originals: dict[str, bool] = {}
    for index, text in enumerate(parsed.texts):
        if text.original:
            taken_originals[text.original] = taken_originals.get(text.original, True) and taken_texts.get(index, False)
    for external_id in sorted(originals & parsed.originals.keys()):
        if taken_originals.get(external_id):
            continue
        original = parsed.originals[external_id]
        where, name = original.line.where, original.id_field
        if name == "item_id":  # the id made for an original the line gave no original_id
            problems.add(f"{where}: field 'original_id': project {slug!r} already has an original {external_id!r}, "
                         "the id this line's original would get; give the line an original_id", original.line.at)
        else:
            problems.add(f"{where}: field '{name}' {external_id!r}: project {slug!r} already has an original "
                         "with this id", original.line.at)
    for index, text in enumerate(parsed.texts):
        if text.group and text.group in groups and not taken_texts.get(index):
            problems.add(f"{text.line.where}: field 'group' {text.group!r}: project {slug!r} already has a perturbed "
                         "text in this group", text.line.at)


def _name_likely_format(lines: list[Line], fmt: str, problems: Problems) -> None:
    """Once for each file the chosen format refused rows of, whose first row looks like another format: say which
    to choose, before that file's line errors (which are reported as they are)."""
    refused = {at[0] for at, _, _ in problems.found}
    first_rows: dict[int, Line] = {}
    for line in lines:
        first_rows.setdefault(line.file_index, line)
    for file_index, line in first_rows.items():
        guess = likely_format(line.row)
        if guess is None or guess[0] == fmt or file_index not in refused:
            continue
        likely, why = guess
        problems.add(f"{line.where}: this looks like a {FORMAT_NAMES[likely]} file ({why}), not a {FORMAT_NAMES[fmt]} "
                     f"file: choose format {likely}", (file_index, 0))


def _positions(parsed: ParsedImport) -> list[int]:
    """Each item's place among the spans of its perturbed text, in text order."""
    by_text: dict[int, list[int]] = defaultdict(list)
    for index, item in enumerate(parsed.items):
        by_text[item.text_index].append(index)
    positions = [0] * len(parsed.items)
    for indexes in by_text.values():
        ordered = sorted(indexes, key=lambda i: (parsed.items[i].perturbed_start, parsed.items[i].perturbed_end, i))
        for position, index in enumerate(ordered):
            positions[index] = position
    return positions


@dataclass
class PreparedPairs:
    """Every row a pair import writes, its values made before the transaction; the project's id (a new project
    has none yet) and the ids of rows written in the same transaction are filled in inside it."""

    parsed: ParsedImport
    fmt: str
    originals: PreparedInsert = field(default_factory=lambda: PreparedInsert(PairOriginal, keys=["project"]))
    texts: PreparedInsert = field(
        default_factory=lambda: PreparedInsert(PerturbedText, keys=["project", "original"])
    )
    items: PreparedInsert = field(default_factory=lambda: PreparedInsert(PairItem, keys=["project", "perturbed"]))
    original_rows: list[tuple[Any, ...]] = field(default_factory=list)
    text_rows: list[tuple[str | None, tuple[Any, ...]]] = field(default_factory=list)  # (original's id, row)
    item_rows: list[tuple[int, tuple[Any, ...]]] = field(default_factory=list)  # (index of its text, row)

    @property
    def labelled(self) -> int:
        return sum(1 for item in self.parsed.items if item.label)

    @property
    def labelled_from_consensus(self) -> int:
        return sum(1 for item in self.parsed.items if item.from_consensus)


def _prepare(parsed: ParsedImport, fmt: str) -> PreparedPairs:
    """Each row's values as stored, converted by the fields (what bulk_create did inside the transaction)."""
    prepared = PreparedPairs(parsed, fmt)
    # Originals of ready pairs are perturbed already: the perturbation job must not make another text of them.
    perturbed_at = None if fmt == "raw" else timezone.now()
    prepared.original_rows = [
        prepared.originals.prepare(external_id=o.external_id, text=o.text, perturbed_at=perturbed_at)
        for o in parsed.originals.values()
    ]
    prepared.text_rows = [
        (t.original, prepared.texts.prepare(group=t.group, text=t.text, source=t.source,
                                            parameters={"imported_from": t.line.file}))
        for t in parsed.texts
    ]
    for item, position in zip(parsed.items, _positions(parsed), strict=True):
        prepared.item_rows.append((item.text_index, prepared.items.prepare(
            position=position, external_id=item.external_id, metadata=item.metadata,
            original_start=item.original_start, original_end=item.original_end, original_words=item.original_words,
            perturbed_start=item.perturbed_start, perturbed_end=item.perturbed_end,
            perturbed_words=item.perturbed_words, imported_fields=item.imported_fields,
            state=PairItem.State.LABELLED if item.label else PairItem.State.POOL, label=item.label,
        )))
    return prepared


def _write(
    project: Project | None, slug: str, prepared: PreparedPairs, user: AbstractBaseUser | None, seen: HighestIds | None
) -> ImportReport:
    """Inside the import's transaction: re-check what another writer could have changed, then only insert."""
    created = project is None
    if project is None:
        project = _create_project(slug, user)
    else:
        assert seen is not None
        _take_turn(project)
        _recheck_added_since(project, prepared.parsed, prepared.fmt, seen)
    rows = [(*row, project.pk) for row in prepared.original_rows]
    try:
        if prepared.text_rows and rows:  # the texts refer to these originals: their ids are needed
            original_pks = dict(zip(prepared.parsed.originals, prepared.originals.insert_returning_ids(rows),
                                    strict=True))
        else:
            prepared.originals.insert(rows)
            original_pks = {}
    except IntegrityError:  # pair_original_id_in_project: a writer that took no turn (_take_turn) added one
        raise PairImportFailed([
            f"project: another import added originals with this import's ids to project {project.slug!r} while "
            "this one was being checked; nothing was imported. Import the files again."
        ]) from None
    text_pks = prepared.texts.insert_returning_ids(
        [(*row, project.pk, original_pks[original] if original else None) for original, row in prepared.text_rows]
    )
    prepared.items.insert((*row, project.pk, text_pks[text_index]) for text_index, row in prepared.item_rows)
    analyze_after_commit(PairOriginal, PerturbedText, PairItem)
    items, labelled = len(prepared.item_rows), prepared.labelled
    return ImportReport(
        project=project, format=prepared.fmt, created_project=created, originals=len(prepared.original_rows),
        perturbed_texts=len(prepared.text_rows), items=items, labelled=labelled, pool=items - labelled,
        labelled_from_consensus=prepared.labelled_from_consensus, unread_consensus=prepared.parsed.unread_consensus,
    )


def import_pairs(
    project_or_slug: Project | str,
    files: Sequence[tuple[str, bytes | str]],
    fmt: str = "pairs",
    user: AbstractBaseUser | None = None,
    *,
    skip_existing: bool = False,
    consensus_as_label: bool = False,
) -> ImportReport:
    """Import pair files into a pairs project, creating it (with ``user`` as admin) when the slug is new.

    ``fmt`` is ``raw`` (texts to perturb), ``pairs`` (FaithLab's pair format) or
    ``hades`` (the HaDes release format). All or nothing: every file is read and
    checked, and every row made, before anything is written; the writes run in
    one transaction that re-checks what another writer could have changed and
    inserts (see the module's docstring), and any problem raises
    PairImportFailed with every message (file, line, field).
    A HaDes row already in the project (same text and replaced span, see
    ``repeats``) is such a problem; with ``skip_existing`` those rows are left out instead and the
    report lists them. Rows of the other formats carry ids, and an id already
    in the project is refused whatever ``skip_existing`` says.
    ``consensus_as_label`` (pair files only): an exported line's consensus H or
    N labels its item when the line has no label of its own; without it, the
    report's warnings() count the lines whose consensus was not imported
    (``pairs`` module).
    """
    problems = Problems()
    if fmt not in PARSERS:
        raise PairImportFailed([f"format: {fmt!r} is not one of {', '.join(FORMATS)}"])
    if not files:
        raise PairImportFailed(["files: no files given"])
    project = _project(project_or_slug, problems)
    lines: list[Line] = []
    for file_index, (name, content) in enumerate(files):
        lines.extend(read_lines(name, content, problems, file_index))
    if fmt == "pairs":
        parsed = parse_pairs(lines, problems, consensus_as_label=consensus_as_label)
    else:
        parsed = PARSERS[fmt](lines, problems)
        if consensus_as_label:
            problems.add(f"consensus_as_label: only for pair files (format pairs), whose exported lines carry a "
                         f"consensus; {fmt} files carry none")
    _name_likely_format(lines, fmt, problems)
    pairs_project = project is not None and project.kind == Project.Kind.PAIRS
    # Read before the checks: what the transaction re-checks is what was added after this.
    seen = HighestIds.read(project) if project is not None and pairs_project else None
    skipped: list[Line] = []
    if fmt == "hades" and (pairs_project or project is None):
        repeats = find_repeats(project, parsed, fmt)
        if skip_existing:
            skipped = [repeat.line for repeat in repeats.rows]
        else:
            for repeat in repeats.rows:
                problems.add(repeat.message, repeat.line.at)
            problems.already_imported = len(repeats.rows)
        parsed = without_items(parsed, repeats.item_indexes)
    elif skip_existing:
        problems.add(f"skip_existing: only for HaDes files, whose rows have no ids; {fmt} rows already in the "
                     "project are refused by their ids")
    if project is not None and pairs_project:
        _check_against_project(project, parsed, problems)
    problems.raise_if_any()
    slug = project_or_slug if isinstance(project_or_slug, str) else project_or_slug.slug
    prepared = _prepare(parsed, fmt)
    try:
        with transaction.atomic():
            report = _write(project, slug, prepared, user, seen)
    except projects.ProjectError as error:  # e.g. the project was created by someone else meanwhile
        raise PairImportFailed([f"project: {error}"]) from None
    report.skipped = skipped
    return report
