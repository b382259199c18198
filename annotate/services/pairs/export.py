"""Exporting a pairs project as JSONL: FaithLab's pair format with the judging results, or the HaDes format.

``pairs``: one item a line with its texts, spans and words, ``group`` (one per
perturbed text), ``metadata``, ``label`` ("H" or "N" for an item labelled on
import, else null: an imported "?" or null label, like a HaDes -1, is no label,
since DESIGN.md's "?" is a judge's abstention, not an item's label), and what
judging made of it: ``votes`` (counted answered judgements), ``consensus``
("H", "N", "none", or null while the item is in the pool or being judged),
``round`` and ``selection`` (why the round drew it). The pair importer accepts
this file back and ignores the judging keys.

``hades``: rows imported from a HaDes file come back as the line they were
read from, byte for byte, unless judging in FaithLab has since given the item
a consensus (a -1 row drawn into a round): then the row is the same with
``hallucination`` set to 1 or 0. Other items are written in HaDes form
(``hades_row``): the text tokenised as the HaDes release is, the tokens the
span touches wrapped in ``===``, ``replaced_ids`` the first and last of them,
``hallucination`` 1 or 0 from the consensus or imported label, -1 otherwise.

HaDes tokens: the release's text is BERT's basic tokenisation of WIKI-40B,
lower-cased ("the u . s .", "19 - year - old", "program ' s run"; DESIGN.md's
example: "western side ."): split at whitespace, and every punctuation
character is a token of its own: ASCII symbols and Unicode's P categories,
so "£100m" stays one token. The tokenizers library's BertPreTokenizer splits
exactly so and gives code-point offsets, which place the item's span.
Accents are kept and CJK characters are not split apart (BERT-uncased does
both): DESIGN.md asks only for lower-casing, and keeping them loses nothing.
Tokenising is idempotent, so a FaithLab export imported as HaDes and exported
again gives the same lines.

Items are read in id order with ``.iterator()``; the votes take one grouped
query, so an export is two queries whatever the project's size.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.db.models import Count, QuerySet
from tokenizers.pre_tokenizers import BertPreTokenizer

from annotate.models import PairItem, PairJudgement, Project
from annotate.services.export import ExportError

FORMATS: tuple[str, ...] = ("pairs", "hades")
CHUNK = 2000
# Python's str.split() also splits at these four separators, which BertPreTokenizer keeps inside words.
_PYTHON_ONLY_SPACES = re.compile("[\x1c-\x1f]")
_BERT_WORDS = BertPreTokenizer()
HADES_VALUES = {"H": 1, "N": 0}
DECIDED = (PairItem.State.CONSENSUS, PairItem.State.LABELLED)


def _votes(project: Project) -> dict[int, dict[str, int]]:
    counts: dict[int, dict[str, int]] = {}
    answered = (
        PairJudgement.objects.filter(item__project=project, counted=True, answered_at__isnull=False)
        .exclude(label="")
        .values_list("item_id", "label")
        .annotate(n=Count("id"))
        .order_by()
    )
    for item_id, label, n in answered:
        counts.setdefault(item_id, {"H": 0, "N": 0, "?": 0})[label] = n
    return counts


def _consensus(item: PairItem) -> str | None:
    if item.state in DECIDED:
        return item.label
    if item.state == PairItem.State.NO_CONSENSUS:
        return "none"
    return None


def pair_row(item: PairItem, votes: dict[str, int] | None) -> dict[str, Any]:
    """One item in FaithLab's pair format (``item`` with its perturbed text, original and round loaded)."""
    original = item.perturbed.original
    return {
        "item_id": item.external_id or f"item-{item.pk}",
        "original_id": original.external_id if original else None,
        "group": item.perturbed.group or f"text-{item.perturbed_id}",
        "original": original.text if original else None,
        "perturbed": item.perturbed.text,
        "original_start": item.original_start,
        "original_end": item.original_end,
        "perturbed_start": item.perturbed_start,
        "perturbed_end": item.perturbed_end,
        "original_words": item.original_words if original else None,
        "perturbed_words": item.perturbed_words,
        "label": item.label if item.state == PairItem.State.LABELLED else None,
        "metadata": item.metadata,
        "votes": votes or {"H": 0, "N": 0, "?": 0},
        "consensus": _consensus(item),
        "round": item.round.number if item.round else None,
        "selection": item.selection or None,
    }


def hades_tokens(text: str) -> list[tuple[int, int, str]]:
    """The HaDes tokens of ``text`` (see the module docstring): (start, end, lower-cased token), code points.

    The same as ``" ".join(tokens).split()`` gives back, so ``replaced_ids``
    count the tokens an importer sees.
    """
    spaced = _PYTHON_ONLY_SPACES.sub(" ", text)  # same length: the offsets still point into ``text``
    return [(start, end, token.lower()) for token, (start, end) in _BERT_WORDS.pre_tokenize_str(spaced)]


def hades_row(
    text: str, start: int, end: int, hallucination: int, tokens: list[tuple[int, int, str]] | None = None
) -> dict[str, Any]:
    """A span of a text in HaDes form: the tokens it touches (whole) are the marked ones.

    ``tokens``: ``hades_tokens(text)`` when the caller already has them (the
    items of one perturbed text share them).
    """
    words = hades_tokens(text) if tokens is None else tokens
    touched = [i for i, (s, e, _) in enumerate(words) if s < end and e > start]
    if not touched:  # a span of whitespace only: mark the token after it (or the last token)
        after = [i for i, (s, _, _) in enumerate(words) if s >= end]
        touched = [after[0] if after else max(len(words) - 1, 0)]
    first, last = touched[0], touched[-1]
    marked = [word for _, _, word in words]
    if marked:
        marked[first] = "===" + marked[first]
        marked[last] = marked[last] + "==="
    return {"replaced": " ".join(marked), "replaced_ids": [first, last], "hallucination": hallucination}


def _hades_value(item: PairItem) -> int:
    return HADES_VALUES.get(item.label, -1) if item.state in DECIDED else -1


def _imported_hades_row(item: PairItem) -> dict[str, Any] | None:
    kept = item.imported_fields or {}
    return kept["row"] if kept.get("format") == "hades" and "row" in kept else None


def hades_line(item: PairItem, tokens: list[tuple[int, int, str]] | None = None) -> str:
    """The item's HaDes line: an imported row as it came (with a FaithLab consensus), others in HaDes form."""
    row = _imported_hades_row(item)
    if row is not None:
        value = _hades_value(item)
        if item.state == PairItem.State.CONSENSUS and row.get("hallucination") != value:
            return json.dumps({**row, "hallucination": value}, ensure_ascii=False)
        return item.imported_fields.get("source_line") or json.dumps(row, ensure_ascii=False)
    made = hades_row(item.perturbed.text, item.perturbed_start, item.perturbed_end, _hades_value(item), tokens)
    return json.dumps(made, ensure_ascii=False)


def export_lines(project: Project, fmt: str) -> Iterator[str]:
    """The export, a line at a time (each ending in a newline)."""
    if fmt not in FORMATS:
        raise ExportError(f"format: {fmt!r} is not a pairs format; choose one of {', '.join(FORMATS)}")
    if project.kind != Project.Kind.PAIRS:
        raise ExportError(f"format: {fmt!r} is for pairs projects; {project.slug!r} is a span annotation project")
    items = PairItem.objects.filter(project=project).order_by("id")
    if fmt == "hades":
        yield from _hades_lines(items)
        return
    votes = _votes(project)
    for item in items.select_related("perturbed__original", "round").iterator(chunk_size=CHUNK):
        yield json.dumps(pair_row(item, votes.get(item.pk)), ensure_ascii=False) + "\n"


def _hades_lines(items: QuerySet[PairItem]) -> Iterator[str]:
    """HaDes lines in id order; a text is tokenised once for its run of items (the items of a text are made together)."""
    text_id, tokens = None, None
    for item in items.select_related("perturbed").iterator(chunk_size=CHUNK):
        if _imported_hades_row(item) is None and item.perturbed_id != text_id:
            text_id, tokens = item.perturbed_id, hades_tokens(item.perturbed.text)
        yield hades_line(item, tokens if item.perturbed_id == text_id else None) + "\n"


def export_pairs(project: Project, fmt: str) -> str:
    """The whole export as JSONL text (``export_lines`` streams it instead)."""
    return "".join(export_lines(project, fmt))


def write_pairs_export(project: Project, fmt: str, out: Path) -> Path:
    """Write the export to one file, line by line."""
    if out.is_dir():
        raise ExportError(f"out: {out} is a directory; the {fmt} format writes one JSONL file")
    lines = export_lines(project, fmt)
    first = next(lines, "")  # checks the format and project before a file is made
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8", newline="") as handle:
        handle.write(first)
        for line in lines:
            handle.write(line)
    return out
