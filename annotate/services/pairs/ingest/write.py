"""Checking parsed pairs against the project and writing them in one transaction."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import models, transaction
from django.template.defaultfilters import pluralize
from django.utils import timezone

from annotate.models import PairConfig, PairItem, PairOriginal, PerturbedText, Project
from annotate.services import projects
from annotate.services.pairs.ingest.hades import parse_hades
from annotate.services.pairs.ingest.lines import Line, PairImportFailed, Problems, read_lines
from annotate.services.pairs.ingest.pairs import parse_pairs
from annotate.services.pairs.ingest.parsed import ParsedImport
from annotate.services.pairs.ingest.raw import parse_raw
from annotate.services.pairs.ingest.repeats import find_repeats, line_ranges, without_items
from annotate.services.planner import analyze_after_commit

FORMATS: tuple[str, ...] = ("pairs", "hades", "raw")
PARSERS = {"pairs": parse_pairs, "hades": parse_hades, "raw": parse_raw}
BATCH = 1000
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

    def describe(self) -> str:
        made = " (new project)" if self.created_project else ""
        if self.format == "raw":
            return f"imported {self.originals} text{pluralize(self.originals)} to perturb into {self.project.slug!r}{made}"
        text = (
            f"imported {self.items} item{pluralize(self.items)} ({self.labelled} labelled, {self.pool} in the pool) "
            f"in {self.perturbed_texts} perturbed text{pluralize(self.perturbed_texts)}, {self.originals} "
            f"original{pluralize(self.originals)}, into {self.project.slug!r}{made}"
        )
        if self.skipped:
            count = len(self.skipped)
            text += (f"; left out {count} row{'' if count == 1 else 's'} already imported "
                     f"({line_ranges(self.skipped)})")
        return text


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


def _check_against_project(project: Project, parsed: ParsedImport, problems: Problems) -> None:
    """Ids and groups already in the project: imports add rows, they never merge into or overwrite old ones."""
    slug = project.slug
    for external_id in sorted(_existing(PairOriginal, project, "external_id", parsed.originals)):
        original = parsed.originals[external_id]
        where, name = original.line.where, original.id_field
        if name == "item_id":  # the id made for an original the line gave no original_id
            problems.add(f"{where}: field 'original_id': project {slug!r} already has an original {external_id!r}, "
                         "the id this line's original would get; give the line an original_id", original.line.at)
        else:
            problems.add(f"{where}: field '{name}' {external_id!r}: project {slug!r} already has an original "
                         "with this id", original.line.at)
    groups = _existing(PerturbedText, project, "group", (t.group for t in parsed.texts if t.group))
    for text in parsed.texts:
        if text.group in groups:
            problems.add(f"{text.line.where}: field 'group' {text.group!r}: project {slug!r} already has a perturbed "
                         "text in this group", text.line.at)
    ids = _existing(PairItem, project, "external_id", (i.external_id for i in parsed.items if i.external_id))
    for item in parsed.items:
        if item.external_id in ids:
            assert item.line is not None
            problems.add(f"{item.line.where}: field 'item_id' {item.external_id!r}: project {slug!r} already has "
                         "an item with this id", item.line.at)


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


def _saved(rows: list[Any]) -> list[Any]:
    if any(row.pk is None for row in rows):  # both supported databases return ids from bulk inserts
        raise RuntimeError("this database returned no ids from a bulk insert; pair import needs them")
    return rows


@transaction.atomic
def _write(
    project: Project | None, slug: str, parsed: ParsedImport, fmt: str, user: AbstractBaseUser | None
) -> ImportReport:
    created = project is None
    if project is None:
        project = projects.create_project(slug, slug=slug, owner=user, kind=Project.Kind.PAIRS)
    PairConfig.objects.get_or_create(project=project)  # a project made before pairs projects got theirs at creation
    # Originals of ready pairs are perturbed already: the perturbation job must not make another text of them.
    perturbed_at = None if fmt == "raw" else timezone.now()
    originals = _saved(PairOriginal.objects.bulk_create(
        [PairOriginal(project=project, external_id=o.external_id, text=o.text, perturbed_at=perturbed_at)
         for o in parsed.originals.values()],
        batch_size=BATCH,
    ))
    original_pks = {o.external_id: o.pk for o in originals}
    texts = _saved(PerturbedText.objects.bulk_create(
        [PerturbedText(project=project, original_id=original_pks[t.original] if t.original else None, group=t.group,
                       text=t.text, source=t.source, parameters={"imported_from": t.line.file})
         for t in parsed.texts],
        batch_size=BATCH,
    ))
    positions = _positions(parsed)
    rows = []
    for item, position in zip(parsed.items, positions, strict=True):
        rows.append(PairItem(
            project=project, perturbed_id=texts[item.text_index].pk, position=position,
            external_id=item.external_id, metadata=item.metadata,
            original_start=item.original_start, original_end=item.original_end, original_words=item.original_words,
            perturbed_start=item.perturbed_start, perturbed_end=item.perturbed_end,
            perturbed_words=item.perturbed_words, imported_fields=item.imported_fields,
            state=PairItem.State.LABELLED if item.label else PairItem.State.POOL, label=item.label,
        ))
    PairItem.objects.bulk_create(rows, batch_size=BATCH)
    analyze_after_commit(PairOriginal, PerturbedText, PairItem)
    labelled = sum(1 for item in parsed.items if item.label)
    return ImportReport(
        project=project, format=fmt, created_project=created, originals=len(originals), perturbed_texts=len(texts),
        items=len(rows), labelled=labelled, pool=len(rows) - labelled,
    )


def import_pairs(
    project_or_slug: Project | str,
    files: Sequence[tuple[str, bytes | str]],
    fmt: str = "pairs",
    user: AbstractBaseUser | None = None,
    *,
    skip_existing: bool = False,
) -> ImportReport:
    """Import pair files into a pairs project, creating it (with ``user`` as admin) when the slug is new.

    ``fmt`` is ``raw`` (texts to perturb), ``pairs`` (FaithLab's pair format) or
    ``hades`` (the HaDes release format). All or nothing: every file is read and
    checked before anything is written, the writes run in one transaction, and
    any problem raises PairImportFailed with every message (file, line, field).
    A HaDes row already in the project (same text and replaced span, see
    ``repeats``) is such a problem; with ``skip_existing`` those rows are left out instead and the
    report lists them. Rows of the other formats carry ids, and an id already
    in the project is refused whatever ``skip_existing`` says.
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
    parsed = PARSERS[fmt](lines, problems)
    pairs_project = project is not None and project.kind == Project.Kind.PAIRS
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
    try:
        report = _write(project, slug, parsed, fmt, user)
    except projects.ProjectError as error:  # e.g. the project was created by someone else meanwhile
        raise PairImportFailed([f"project: {error}"]) from None
    report.skipped = skipped
    return report
