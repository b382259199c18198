"""Exporting a pairs project as JSONL: FaithLab's pair format with the judging results, or the HaDes format.

``pairs``: one item a line with its texts, spans and words, ``group`` (one per
perturbed text), ``metadata``, the ``label`` it was imported with, and what
judging made of it: ``votes`` (counted answered judgements), ``consensus``
("H", "N", "none", or null while the item is in the pool or being judged),
``round`` and ``selection`` (why the round drew it). The pair importer accepts
this file back and ignores the judging keys.

``hades``: rows imported from a HaDes file come back as the line they were
read from, byte for byte, unless judging in FaithLab has since given the item
a consensus (a -1 row drawn into a round): then the row is the same with
``hallucination`` set to 1 or 0. Other items are written in HaDes form:
lower-cased words split on whitespace, the words the span touches wrapped in
``===``, ``replaced_ids`` the first and last of them, ``hallucination`` 1 or 0
from the consensus or imported label, -1 otherwise.

Items are read in id order with ``.iterator()``; the votes take one grouped
query, so an export is two queries whatever the project's size.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.db.models import Count

from annotate.models import PairItem, PairJudgement, Project
from annotate.services.export import ExportError

FORMATS: tuple[str, ...] = ("pairs", "hades")
CHUNK = 2000
WORD = re.compile(r"\S+")  # the words of str.split()
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


def hades_row(text: str, start: int, end: int, hallucination: int) -> dict[str, Any]:
    """A span of a text in HaDes form: the words it touches (whole) are the marked ones."""
    words = [(match.start(), match.end(), match.group().lower()) for match in WORD.finditer(text)]
    touched = [i for i, (s, e, _) in enumerate(words) if s < end and e > start]
    if not touched:  # a span of whitespace only: mark the word after it (or the last word)
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


def hades_line(item: PairItem) -> str:
    kept = item.imported_fields or {}
    if kept.get("format") == "hades" and "row" in kept:
        row = kept["row"]
        value = _hades_value(item)
        if item.state == PairItem.State.CONSENSUS and row.get("hallucination") != value:
            return json.dumps({**row, "hallucination": value}, ensure_ascii=False)
        return kept.get("source_line") or json.dumps(row, ensure_ascii=False)
    row = hades_row(item.perturbed.text, item.perturbed_start, item.perturbed_end, _hades_value(item))
    return json.dumps(row, ensure_ascii=False)


def export_lines(project: Project, fmt: str) -> Iterator[str]:
    """The export, a line at a time (each ending in a newline)."""
    if fmt not in FORMATS:
        raise ExportError(f"format: {fmt!r} is not a pairs format; choose one of {', '.join(FORMATS)}")
    if project.kind != Project.Kind.PAIRS:
        raise ExportError(f"format: {fmt!r} is for pairs projects; {project.slug!r} is a span annotation project")
    items = PairItem.objects.filter(project=project).order_by("id")
    if fmt == "hades":
        for item in items.select_related("perturbed").iterator(chunk_size=CHUNK):
            yield hades_line(item) + "\n"
        return
    votes = _votes(project)
    for item in items.select_related("perturbed__original", "round").iterator(chunk_size=CHUNK):
        yield json.dumps(pair_row(item, votes.get(item.pk)), ensure_ascii=False) + "\n"


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
