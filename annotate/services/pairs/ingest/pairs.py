"""FaithLab's pair format: one item (one replaced span) a line.

Fields: ``item_id``, ``original`` (text, or null when there is none, as for
HaDes rows), ``perturbed``, ``original_start``/``original_end`` and
``perturbed_start``/``perturbed_end`` (code points, end-exclusive),
optional ``original_words``/``perturbed_words`` (when given, exactly the
text at the span), ``group`` (items of one perturbed text share it),
``original_id``, ``metadata`` (an object) and ``label`` ("H" or "N" for an
item labelled already; "?" or null for none). Items with the same group share
one perturbed text; items without a group share one when their original and
perturbed texts are the same.

An export adds ``votes``, ``deciding_votes``, ``extra_votes``, ``consensus``,
``round`` and ``selection``; they are accepted and not imported, so by default
an export imports again as a fresh pool (items labelled on import keep their
``label``). With ``consensus_as_label`` a line's ``consensus`` "H" or "N" (what
judging decided) becomes the item's label when the line has no label of its
own (``label`` absent, null or "?"; a label the line gives wins): the item is
imported labelled, as a HaDes row with 1 or 0 is. A consensus "none" or null
leaves the item in the pool; the option refuses any other value. Without the
option, the lines whose consensus H or N was not taken are collected
(``ParsedImport.unread_consensus``) for the import's warning, which names the
option. Votes are never imported as judgements: the new project's figures
(pair_agreement and the others) start afresh either way.
"""

from __future__ import annotations

from typing import Any

from annotate.models import PairItem, PairOriginal, PerturbedText
from annotate.services.ingest.checks import ImportFailed, described, max_length
from annotate.services.pairs.ingest.lines import (
    Line,
    Problems,
    check_fields,
    identifier,
    nonempty_text,
    pair_label,
    span,
)
from annotate.services.pairs.ingest.parsed import ParsedImport, ParsedItem, ParsedOriginal, ParsedText

PAIR_FIELDS = frozenset({
    "item_id", "original_id", "group", "original", "perturbed", "original_start", "original_end",
    "perturbed_start", "perturbed_end", "original_words", "perturbed_words", "label", "metadata",
})
# Written on export, not imported (but ``consensus`` under consensus_as_label, and named in a warning without it).
EXPORT_ONLY_FIELDS = frozenset({"votes", "deciding_votes", "extra_votes", "consensus", "round", "selection"})
REQUIRED = ("item_id", "original", "perturbed", "perturbed_start", "perturbed_end")
# An exported line's ``consensus`` (annotate.services.pairs.export): what consensus_as_label reads.
CONSENSUS_LABELS = ("H", "N")
CONSENSUS_VALUES = (*CONSENSUS_LABELS, "none", None)


def _optional_id(row: dict[str, Any], name: str, where: str, limit: int) -> str:
    value = row.get(name)
    return "" if value is None else identifier(value, where, name, limit)


def _read_item(line: Line, consensus_as_label: bool) -> tuple[ParsedItem, str | None, str, str, str]:
    """One line checked on its own: the item, and its original text, perturbed text, original id and group."""
    row, where = line.row, line.where
    check_fields(
        line, PAIR_FIELDS, REQUIRED, "pairs", ignored=EXPORT_ONLY_FIELDS, hint="; put other values in 'metadata'"
    )
    external_id = identifier(row["item_id"], where, "item_id", max_length(PairItem, "external_id"))
    perturbed = nonempty_text(row["perturbed"], where, "perturbed")
    perturbed_start, perturbed_end, perturbed_words = span(row, perturbed, where, "perturbed")
    original = row["original"]
    original_id = _optional_id(row, "original_id", where, max_length(PairOriginal, "external_id"))
    item = ParsedItem(
        text_index=-1, external_id=external_id, perturbed_start=perturbed_start, perturbed_end=perturbed_end,
        perturbed_words=perturbed_words, line=line,
    )
    if original is None:
        for name in ("original_start", "original_end", "original_words", "original_id"):
            if row.get(name) not in (None, ""):
                raise ImportFailed(f"{where}: field '{name}' must be null when 'original' is null")
    else:
        original = nonempty_text(original, where, "original")
        item.original_start, item.original_end, item.original_words = span(row, original, where, "original")
    group = _optional_id(row, "group", where, max_length(PerturbedText, "group"))
    metadata = row.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ImportFailed(f"{where}: field 'metadata' must be an object, found {described(metadata)}")
    item.metadata = metadata or {}
    item.label = pair_label(row.get("label"), where)
    if consensus_as_label:
        consensus = row.get("consensus")
        if consensus not in CONSENSUS_VALUES:
            raise ImportFailed(f'{where}: field \'consensus\' must be "H", "N", "none" or null (what an export '
                               f"writes), found {described(consensus)}")
        if not item.label and consensus in CONSENSUS_LABELS:
            item.label, item.from_consensus = consensus, True
    return item, original, perturbed, original_id, group


def _unread_consensus(line: Line, item: ParsedItem) -> bool:
    """The line carries a consensus H or N that this import does not take (the option is off, no label of its own)."""
    consensus = line.row.get("consensus")
    return not item.label and isinstance(consensus, str) and consensus in CONSENSUS_LABELS


def parse_pairs(lines: list[Line], problems: Problems, *, consensus_as_label: bool = False) -> ParsedImport:
    """The items of pair lines; with ``consensus_as_label`` an exported consensus H or N labels an item that has no
    label of its own (see the module's docstring)."""
    parsed = ParsedImport()
    item_lines: dict[str, Line] = {}
    texts: dict[tuple[str, ...], int] = {}  # ("group", g) or ("texts", original, perturbed) -> text index
    originals_by_text: dict[str, str] = {}  # original text -> external id, for lines that give no original_id
    for line in lines:
        try:
            item, original, perturbed, original_id, group = _read_item(line, consensus_as_label)
        except ImportFailed as error:
            problems.add(str(error), line.at)
            continue
        where = line.where
        earlier_line = item_lines.setdefault(item.external_id, line)
        if earlier_line is not line:
            problems.add(f"{where}: field 'item_id' {item.external_id!r} was already given on {earlier_line.place}", line.at)
            continue
        key = ("group", group) if group else ("texts", original or "", perturbed, "" if original is None else "o")
        index = texts.get(key)
        if index is not None:
            shared = parsed.texts[index]
            first_original = parsed.originals[shared.original].text if shared.original else None
            message = None
            if shared.text != perturbed:
                message = f"field 'perturbed' differs from {shared.line.place}, which has the same group {group!r}"
            elif first_original != original:
                message = f"field 'original' differs from {shared.line.place}, which has the same group {group!r}"
            elif original_id and original_id != shared.original:
                message = f"field 'original_id' {original_id!r} differs from {shared.original!r} on {shared.line.place}"
            if message:
                problems.add(f"{where}: {message}", line.at)
                continue
        else:
            original_key = None
            if original is not None:
                original_key = original_id or originals_by_text.get(original) or f"original-of-{item.external_id}"
                known = parsed.originals.get(original_key)
                if known is None:
                    known = ParsedOriginal(original_key, original, line, "original_id" if original_id else "item_id")
                    parsed.originals[original_key] = known
                    originals_by_text.setdefault(original, original_key)
                elif known.text != original:
                    problems.add(
                        f"{where}: field 'original' differs from {known.line.place}, which has the same "
                        f"original_id {original_key!r}",
                        line.at,
                    )
                    continue
            index = len(parsed.texts)
            texts[key] = index
            parsed.texts.append(ParsedText(perturbed, PerturbedText.Source.PAIRS, original_key, group, line))
        item.text_index = index
        parsed.items.append(item)
        if not consensus_as_label and _unread_consensus(line, item):
            parsed.unread_consensus.append(line)
    return parsed
