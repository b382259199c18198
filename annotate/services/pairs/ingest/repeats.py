"""HaDes rows an import repeats: items already in the project.

HaDes rows carry no id: without this check a second import of a release
file adds every row again. An item is the same when its original text (none
for HaDes rows), perturbed text and replaced span (code points in the
perturbed text) are. A HaDes row is also the same as an item made in
FaithLab (perturbed, or imported from a pair file) when it is that item's
HaDes export: the item's text lower-cased and split into HaDes words
(annotate.services.pairs.hades_text), the same words marked; so importing a
project's own HaDes export back adds nothing. By default such rows refuse the whole import, each named
with its file and line and the item it repeats; ``skip_existing`` leaves them
out instead, and the import's report lists them. Rows repeated within one
import are not repeats: they are the file's own data (a release file may hold
the same row twice) and the HaDes export must give them back line for line.
Pair-format rows are told apart by their ``item_id`` (and groups) instead,
already refused when in use.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from annotate.models import PairItem, PerturbedText, Project
from annotate.services.pairs.hades_text import HadesUnwritable, Token, hades_row, hades_tokens
from annotate.services.pairs.ingest.lines import Line
from annotate.services.pairs.ingest.parsed import ParsedImport

IN_CHUNK = 200  # perturbed texts per `IN (...)` query: long strings, well under SQLite's parameter limit

ItemKey = tuple[str | None, str, int, int]  # original text (None without one), perturbed text, start, end
# What a key of the project names: the item in words, and whether the key is its HaDes export (not its own texts).
Existing = dict[ItemKey, tuple[str, bool]]


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


def _letters(text: str) -> str:
    """A text's non-space characters, case-folded: the same for a text and its HaDes form (whose tokens are its
    non-space characters, each token lower-cased; the case fold of a lower-cased character is the character's own,
    checked for every code point)."""
    return "".join(text.split()).casefold()


def hades_form(text: str, start: int, end: int, tokens: list[Token]) -> ItemKey | None:
    """The key of the row a HaDes export writes for the span [start, end) of ``text`` as a HaDes import reads it
    back (annotate.services.pairs.ingest.hades): no original, the tokens joined by spaces, the marked tokens' code
    points. None when HaDes cannot carry the span (the export refuses it)."""
    try:
        first, last = hades_row(text, start, end, -1, tokens)["replaced_ids"]
    except HadesUnwritable:
        return None
    words = [word for _, _, word in tokens]
    hades_start = sum(len(word) + 1 for word in words[:first])
    return (None, " ".join(words), hades_start, hades_start + len(" ".join(words[first : last + 1])))


# An item as the checks read it: id, external id, perturbed text id and text, span, file and line it came from.
ItemRow = tuple[int, str, int, str, int, int, str | None, int | None]


def _exported_keys(rows: Iterable[ItemRow], letters: set[str]) -> Existing:
    """Key of its HaDes export -> description, for the items of ``rows`` whose HaDes text could be a parsed one
    (same letters, ``_letters``): only those are tokenised, each text once."""
    found: Existing = {}
    tokens: dict[int, list[Token] | None] = {}
    for pk, external_id, perturbed_id, text, start, end, file, line in rows:
        if perturbed_id not in tokens:
            tokens[perturbed_id] = hades_tokens(text) if _letters(text) in letters else None
        text_tokens = tokens[perturbed_id]
        if text_tokens is None:
            continue
        key = hades_form(text, start, end, text_tokens)
        if key is not None:
            found.setdefault(key, (_described(external_id, pk, file, line), True))
    return found


def _made_in_faithlab(project: Project, letters: set[str]) -> Iterator[ItemRow]:
    """The project's items whose perturbed text was not read from a HaDes file and has the letters of a parsed
    text: every such text is read (a text's HaDes form is not something the database can compare), its items only
    when it may match."""
    texts = {
        pk: text
        for pk, text in PerturbedText.objects.filter(project=project).exclude(source=PerturbedText.Source.HADES)
        .values_list("pk", "text").iterator()
        if _letters(text) in letters
    }
    ids = sorted(texts)
    for first in range(0, len(ids), IN_CHUNK):
        rows = (
            PairItem.objects.filter(perturbed_id__in=ids[first : first + IN_CHUNK])
            .order_by("id")
            .values_list("pk", "external_id", "perturbed_id", "perturbed_start", "perturbed_end",
                         "imported_fields__file", "imported_fields__line")
        )
        for pk, external_id, perturbed_id, start, end, file, line in rows:
            yield pk, external_id, perturbed_id, texts[perturbed_id], start, end, file, line


def _items_in_project(project: Project, texts: set[str], *, exports: bool) -> Existing:
    """Key -> description of the project's items whose perturbed text is one of ``texts``; with ``exports``, also
    the keys of the HaDes exports of its items made in FaithLab."""
    wanted = sorted(texts)
    found: Existing = {}
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
            found.setdefault((original, text, start, end), (_described(external_id, pk, file, line), False))
    if exports:
        letters = {_letters(text) for text in texts}
        for key, described in _exported_keys(_made_in_faithlab(project, letters), letters).items():
            found.setdefault(key, described)
    return found


def _what_matched(fmt: str, key: ItemKey) -> str:
    """What the row shares with the item, in the words of the row's format (a HaDes row has no original text)."""
    if fmt == "hades":
        return "the same text and replaced span (fields replaced and replaced_ids)"
    if key[0] is None:
        return "the same perturbed text and replaced span"
    return "the same original, perturbed text and replaced span"


def _items_added_since(project: Project, after: int, texts: set[str], *, exports: bool) -> Existing:
    """Key -> description of the project's items with an id above ``after``: those added since it was read; with
    ``exports``, also the keys of the HaDes exports of those made in FaithLab whose text could be one of ``texts``."""
    found: Existing = {}
    rows = (
        PairItem.objects.filter(project=project, pk__gt=after)
        .order_by("id")
        .values_list("pk", "external_id", "perturbed_id", "perturbed__text", "perturbed__original__text",
                     "perturbed__source", "perturbed_start", "perturbed_end", "imported_fields__file",
                     "imported_fields__line")
    )
    made_here: list[ItemRow] = []
    for pk, external_id, perturbed_id, text, original, source, start, end, file, line in rows:
        found.setdefault((original, text, start, end), (_described(external_id, pk, file, line), False))
        if source != PerturbedText.Source.HADES:
            made_here.append((pk, external_id, perturbed_id, text, start, end, file, line))
    if exports and made_here:
        for key, described in _exported_keys(made_here, {_letters(text) for text in texts}).items():
            found.setdefault(key, described)
    return found


def find_repeats(project: Project | None, parsed: ParsedImport, fmt: str) -> Repeats:
    """The parsed items that are already in ``project`` (None: a new project, so none); ``fmt`` words the messages."""
    if project is None:
        return Repeats()
    texts = {text.text for text in parsed.texts}
    return _repeats_of(project, parsed, fmt, _items_in_project(project, texts, exports=fmt == "hades"))


def find_repeats_added_since(project: Project, parsed: ParsedImport, fmt: str, after: int) -> Repeats:
    """The parsed items repeating an item of ``project`` with an id above ``after``: the re-check inside the
    import's transaction, one query however many rows, of what another writer added after find_repeats ran."""
    texts = {text.text for text in parsed.texts}
    return _repeats_of(project, parsed, fmt, _items_added_since(project, after, texts, exports=fmt == "hades"))


def _repeats_of(project: Project, parsed: ParsedImport, fmt: str, existing: Existing) -> Repeats:
    repeats = Repeats()
    if not existing:
        return repeats
    for index, item in enumerate(parsed.items):
        assert item.line is not None
        key = _key(parsed, index)
        if key in existing:
            described, exported = existing[key]
            if exported:
                what = (f"it is the HaDes export of {described.rstrip(',')} (that item's text lower-cased and split "
                        "into HaDes words, the same words marked: fields replaced and replaced_ids)")
            else:
                what = f"{described} has {_what_matched(fmt, key)}"
            repeats.rows.append(Repeat(item.line, f"{item.line.where}: this row is already in project "
                                       f"{project.slug!r}: {what}"))
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
