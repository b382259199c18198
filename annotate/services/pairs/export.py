"""Exporting a pairs project as JSONL: FaithLab's pair format with the judging results, or the HaDes format.

``pairs``: one item a line with its texts, spans and words, ``group`` (one per
perturbed text), ``metadata``, ``label`` ("H" or "N" for an item labelled on
import, else null: an imported "?" or null label, like a HaDes -1, is no label,
since DESIGN.md's "?" is a judge's abstention, not an item's label), and what
judging made of it: ``votes`` (every answered judgement by a judge who is not
blocked), split into ``deciding_votes`` (the answers the consensus and
``pair_agreement`` rest on: the item's first ``judges_needed`` answers) and
``extra_votes`` (answers past those, which an item gets when a judge is
unblocked after others took their places; they decide nothing), so that the
figures can be recomputed from the file; ``consensus`` ("H", "N", "none", or
null while the item is in the pool or being judged), ``round`` and
``selection`` (why the round drew it). The split comes from
``agreement.answers_by_item``, the function the figures use. The pair
importer accepts this file back and ignores the judging keys.

``hades``: rows imported from a HaDes file come back as the line they were
read from, byte for byte, unless judging in FaithLab has since given the item
a consensus (a -1 row drawn into a round): then the line is the same with
the text of its ``hallucination`` value replaced by 1 or 0, every other byte
(escapes, key order, spacing) as it came. Other items are written in HaDes form
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

Items are read in id order with ``.iterator()``; the votes take one query,
so an export is two queries whatever the project's size.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.db.models import QuerySet
from tokenizers.pre_tokenizers import BertPreTokenizer

from annotate.models import PairItem, PairJudgement, Project
from annotate.services.export import ExportError
from annotate.services.pairs.agreement import ItemAnswers, answers_by_item

FORMATS: tuple[str, ...] = ("pairs", "hades")
CHUNK = 2000
# Python's str.split() also splits at these four separators, which BertPreTokenizer keeps inside words.
_PYTHON_ONLY_SPACES = re.compile("[\x1c-\x1f]")
_BERT_WORDS = BertPreTokenizer()
_JSON_SPACE = " \t\n\r"  # the whitespace JSON allows between tokens
_JSON_DECODER = json.JSONDecoder()
HADES_VALUES = {"H": 1, "N": 0}
DECIDED = (PairItem.State.CONSENSUS, PairItem.State.LABELLED)


def vote_counts(labels: list[str]) -> dict[str, int]:
    """``{"H", "N", "?"}`` counts of answers, the shape of every votes field of the export."""
    return {answer: labels.count(answer) for answer in ("H", "N", "?")}


def _consensus(item: PairItem) -> str | None:
    if item.state in DECIDED:
        return item.label
    if item.state == PairItem.State.NO_CONSENSUS:
        return "none"
    return None


def pair_row(item: PairItem, answers: ItemAnswers | None) -> dict[str, Any]:
    """One item in FaithLab's pair format (``item`` with its perturbed text, original and round loaded).

    ``answers``: the item's split answers from ``answers_by_item``, None when it has none.
    """
    original = item.perturbed.original
    deciding, extra = (answers.deciding, answers.extra) if answers else ([], [])
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
        "votes": vote_counts([*deciding, *extra]),
        "deciding_votes": vote_counts(deciding),
        "extra_votes": vote_counts(extra),
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


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in _JSON_SPACE:
        at += 1
    return at


def value_span(line: str, key: str) -> tuple[int, int] | None:
    """Where the value of ``key`` lies in the text of a JSON object (code points, end-exclusive).

    Only the object's own keys are looked at, never nested ones; a key given
    twice gives its last value, the one ``json.loads`` keeps. Keys are
    compared decoded, so an escaped spelling of the name is found too. None
    when the text is not an object or the key is absent.
    """
    try:
        at = _skip_space(line, 0)
        if line[at : at + 1] != "{":
            return None
        at = _skip_space(line, at + 1)
        if line[at : at + 1] == "}":
            return None
        found = None
        while line[at : at + 1] == '"':
            name, at = json.decoder.scanstring(line, at + 1)
            at = _skip_space(line, at)
            if line[at : at + 1] != ":":
                return None
            start = _skip_space(line, at + 1)
            _, end = _JSON_DECODER.raw_decode(line, start)
            if name == key:
                found = (start, end)
            at = _skip_space(line, end)
            if line[at : at + 1] == "}":
                return found
            if line[at : at + 1] != ",":
                return None
            at = _skip_space(line, at + 1)
    except json.JSONDecodeError:
        return None
    return None


def _relabelled_line(item: PairItem, row: dict[str, Any], value: int) -> str:
    """The imported line with only the text of its ``hallucination`` value replaced, every other byte as it came.

    Re-serialising the row would change what the file's author wrote
    (escapes, key order, spacing, number spelling), and the README promises
    the row back as it came but for the label. A row stored without its line
    (imported before lines were kept) can only be written anew.
    """
    source = item.imported_fields.get("source_line") or ""
    found = value_span(source, "hallucination")
    if found is None:
        return json.dumps({**row, "hallucination": value}, ensure_ascii=False)
    start, end = found
    return f"{source[:start]}{value}{source[end:]}"


def hades_line(item: PairItem, tokens: list[tuple[int, int, str]] | None = None) -> str:
    """The item's HaDes line: an imported row as it came (with a FaithLab consensus), others in HaDes form."""
    row = _imported_hades_row(item)
    if row is not None:
        value = _hades_value(item)
        if item.state == PairItem.State.CONSENSUS and row.get("hallucination") != value:
            return _relabelled_line(item, row, value)
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
    answers = answers_by_item(PairJudgement.objects.filter(item__project=project))
    for item in items.select_related("perturbed__original", "round").iterator(chunk_size=CHUNK):
        yield json.dumps(pair_row(item, answers.get(item.pk)), ensure_ascii=False) + "\n"


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
