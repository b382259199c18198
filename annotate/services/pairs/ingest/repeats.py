"""HaDes rows an import repeats: items already in the project.

HaDes rows carry no id: without this check a second import of a release
file adds every row again. An item is the same when its original text (none
for HaDes rows), perturbed text and replaced span (code points in the
perturbed text) are. By default such rows refuse the whole import, each named
with its file and line and the item it repeats; ``skip_existing`` leaves them
out instead, and the import's report lists them. Rows repeated within one
import are not repeats: they are the file's own data (a release file may hold
the same row twice) and the HaDes export must give them back line for line.
Pair-format rows are told apart by their ``item_id`` (and groups) instead,
already refused when in use.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from annotate.models import PairItem, PerturbedText, Project
from annotate.services.pairs.ingest.lines import Line
from annotate.services.pairs.ingest.parsed import ParsedImport

IN_CHUNK = 200  # perturbed texts per `IN (...)` query: long strings, well under SQLite's parameter limit

ItemKey = tuple[str | None, str, int, int]  # original text (None without one), perturbed text, start, end


@dataclass(frozen=True)
class Repeat:
    line: Line
    message: str  # names the line and what it repeats


@dataclass
class Repeats:
    rows: list[Repeat] = field(default_factory=list)
    item_indexes: set[int] = field(default_factory=set)  # indexes into ParsedImport.items


def _key(parsed: ParsedImport, index: int) -> ItemKey:
    item = parsed.items[index]
    text = parsed.texts[item.text_index]
    original = parsed.originals[text.original].text if text.original else None
    return (original, text.text, item.perturbed_start, item.perturbed_end)


def _described(external_id: str, pk: int, file: str | None, line: int | None) -> str:
    name = f"item {external_id!r}" if external_id else f"item {pk}"
    return f"{name}, imported from line {line} of {file}," if file and line else f"{name}"


def _items_in_project(project: Project, texts: set[str]) -> dict[ItemKey, str]:
    """Key -> description of the project's items whose perturbed text is one of ``texts``."""
    wanted = sorted(texts)
    found: dict[ItemKey, str] = {}
    for first in range(0, len(wanted), IN_CHUNK):
        perturbed = dict(
            (pk, (text, original))
            for pk, text, original in PerturbedText.objects.filter(
                project=project, text__in=wanted[first : first + IN_CHUNK]
            ).values_list("pk", "text", "original__text")
        )
        rows = (
            PairItem.objects.filter(perturbed_id__in=list(perturbed))
            .order_by("id")
            .values_list("pk", "external_id", "perturbed_id", "perturbed_start", "perturbed_end",
                         "imported_fields__file", "imported_fields__line")
        )
        for pk, external_id, perturbed_id, start, end, file, line in rows:
            text, original = perturbed[perturbed_id]
            found.setdefault((original, text, start, end), _described(external_id, pk, file, line))
    return found


def _what_matched(fmt: str, key: ItemKey) -> str:
    """What the row shares with the item, in the words of the row's format (a HaDes row has no original text)."""
    if fmt == "hades":
        return "the same text and replaced span (fields replaced and replaced_ids)"
    if key[0] is None:
        return "the same perturbed text and replaced span"
    return "the same original, perturbed text and replaced span"


def _items_added_since(project: Project, after: int) -> dict[ItemKey, str]:
    """Key -> description of the project's items with an id above ``after``: those added since it was read."""
    found: dict[ItemKey, str] = {}
    rows = (
        PairItem.objects.filter(project=project, pk__gt=after)
        .order_by("id")
        .values_list("pk", "external_id", "perturbed__text", "perturbed__original__text", "perturbed_start",
                     "perturbed_end", "imported_fields__file", "imported_fields__line")
    )
    for pk, external_id, text, original, start, end, file, line in rows:
        found.setdefault((original, text, start, end), _described(external_id, pk, file, line))
    return found


def find_repeats(project: Project | None, parsed: ParsedImport, fmt: str) -> Repeats:
    """The parsed items that are already in ``project`` (None: a new project, so none); ``fmt`` words the messages."""
    if project is None:
        return Repeats()
    return _repeats_of(project, parsed, fmt, _items_in_project(project, {text.text for text in parsed.texts}))


def find_repeats_added_since(project: Project, parsed: ParsedImport, fmt: str, after: int) -> Repeats:
    """The parsed items repeating an item of ``project`` with an id above ``after``: the re-check inside the
    import's transaction, one query however many rows, of what another writer added after find_repeats ran."""
    return _repeats_of(project, parsed, fmt, _items_added_since(project, after))


def _repeats_of(project: Project, parsed: ParsedImport, fmt: str, existing: dict[ItemKey, str]) -> Repeats:
    repeats = Repeats()
    if not existing:
        return repeats
    for index, item in enumerate(parsed.items):
        assert item.line is not None
        key = _key(parsed, index)
        if key in existing:
            repeats.rows.append(Repeat(item.line, f"{item.line.where}: this row is already in project "
                                       f"{project.slug!r}: {existing[key]} has {_what_matched(fmt, key)}"))
            repeats.item_indexes.add(index)
    return repeats


def without_items(parsed: ParsedImport, left_out: set[int]) -> ParsedImport:
    """``parsed`` without the items at ``left_out``, and without the texts and originals only they used."""
    if not left_out:
        return parsed
    items = [item for index, item in enumerate(parsed.items) if index not in left_out]
    used_texts = sorted({item.text_index for item in items})
    new_index = {old: new for new, old in enumerate(used_texts)}
    texts = [parsed.texts[old] for old in used_texts]
    used_originals = {text.original for text in texts if text.original}
    return ParsedImport(
        originals={key: original for key, original in parsed.originals.items() if key in used_originals},
        texts=texts,
        items=[replace(item, text_index=new_index[item.text_index]) for item in items],
    )


def line_ranges(lines: list[Line]) -> str:
    """``a.jsonl: lines 1-3, 7; b.jsonl: line 2``: the lines by file, in the order given, runs joined."""
    by_file: dict[str, list[int]] = {}
    for line in lines:
        by_file.setdefault(line.file, []).append(line.number)
    parts = []
    for file, numbers in by_file.items():
        numbers = sorted(set(numbers))
        runs: list[list[int]] = []
        for number in numbers:
            if runs and number == runs[-1][1] + 1:
                runs[-1][1] = number
            else:
                runs.append([number, number])
        shown = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
        parts.append(f"{file}: line{'s' if len(numbers) > 1 else ''} {shown}")
    return "; ".join(parts)
