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
(``hades_text.hades_row``): the text lower-cased and split into tokens as the
HaDes release is (punctuation, each Han, Kana or Thai character and each
emoji a token of its own, no token splitting a character; the rule and why
are in ``hades_text``), the tokens the span touches wrapped in ``===``,
``replaced_ids`` the first and last of them, ``hallucination`` 1 or 0 from
the consensus or imported label, -1 otherwise.

An item HaDes cannot carry faithfully (a span of whitespace only, a span
starting or ending with a "=" token, a text too long for a HaDes import
once split) refuses the whole export with an ExportError naming each such
item, raised by ``export_lines`` before the first line, so no partial or
wrong file is written or sent. To refuse before the first line, a HaDes
export makes every line while it checks the items, in one pass, and keeps
them in a temporary file (in memory while small) until they are sent:
each text is tokenised once, rather than once to check and once to write.

Items are read in id order with ``.iterator()``; the votes take one query,
so an export is two queries whatever the project's size (a HaDes export
reads the items once).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from tempfile import SpooledTemporaryFile
from typing import IO, Any

from django.db.models import QuerySet

from annotate.models import PairItem, PairJudgement, PerturbedText, Project
from annotate.services.export import ExportError
from annotate.services.export.whole_files import whole_file
from annotate.services.ingest.checks import MAX_MESSAGES, MAX_TEXT_CHARS
from annotate.services.pairs.agreement import ItemAnswers, answers_by_item
from annotate.services.pairs.hades_text import (
    MARKER,
    HadesUnwritable,
    Token,
    check_round_trip,
    hades_row,
    hades_tokens,
)

__all__ = ["FORMATS", "export_lines", "export_pairs", "hades_line", "hades_row", "hades_tokens", "pair_row",
           "write_pairs_export"]

FORMATS: tuple[str, ...] = ("pairs", "hades")
CHUNK = 2000
# A HaDes export's lines stay in memory up to this size, then go to a temporary file, until they are sent.
SPOOL_BYTES = 16 * 1024 * 1024
# Texts whose tokens a HaDes export keeps: items of a text are usually next to each other in id order, but a
# pair file's rows can alternate between texts, and a text left this far behind is tokenised again if it returns.
TEXTS_KEPT = 64
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
        "item_id": item.exported_id,
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


def hades_line(item: PairItem, tokens: list[Token] | None = None) -> str:
    """The item's HaDes line: an imported row as it came (with a FaithLab consensus), others in HaDes form.

    Raises HadesUnwritable for an item HaDes cannot carry (``hades_row``), or
    whose line a HaDes import would refuse as too long.
    """
    row = _imported_hades_row(item)
    if row is not None:
        value = _hades_value(item)
        if item.state == PairItem.State.CONSENSUS and row.get("hallucination") != value:
            return _relabelled_line(item, row, value)
        return item.imported_fields.get("source_line") or json.dumps(row, ensure_ascii=False)
    made = hades_row(item.perturbed.text, item.perturbed_start, item.perturbed_end, _hades_value(item), tokens)
    if len(made["replaced"]) > MAX_TEXT_CHARS:
        raise HadesUnwritable(
            f"its text split into HaDes tokens, with the {MARKER} markers, has {len(made['replaced']):,} characters; "
            f"a HaDes import takes at most {MAX_TEXT_CHARS:,}"
        )
    return json.dumps(made, ensure_ascii=False)


def export_lines(project: Project, fmt: str) -> Iterator[str]:
    """The export, a line at a time (each ending in a newline).

    Every check runs when this is called, before the first line: a view can
    answer an error instead of a stream cut short, and the command writes no
    file. A HaDes export reads the items once, checking each and making its line.
    """
    if fmt not in FORMATS:
        raise ExportError(f"format: {fmt!r} is not a pairs format; choose one of {', '.join(FORMATS)}")
    if project.kind != Project.Kind.PAIRS:
        raise ExportError(f"format: {fmt!r} is for pairs projects; {project.slug!r} is a span annotation project")
    items = PairItem.objects.filter(project=project).order_by("id")
    if fmt == "hades":
        return _hades_lines(project, items)
    return _pair_lines(project, items)


def _pair_lines(project: Project, items: QuerySet[PairItem]) -> Iterator[str]:
    answers = answers_by_item(PairJudgement.objects.filter(item__project=project))
    for item in items.select_related("perturbed__original", "round").iterator(chunk_size=CHUNK):
        yield json.dumps(pair_row(item, answers.get(item.pk)), ensure_ascii=False) + "\n"


class _HadesTexts:
    """Each perturbed text's HaDes tokens, and why they would not read back the same (or None), made once.

    The last ``kept`` texts used are kept, so items of a text that are not
    next to each other in id order still share its tokens.
    """

    def __init__(self, kept: int) -> None:
        self._kept = kept
        self._texts: OrderedDict[int, tuple[list[Token], str | None]] = OrderedDict()

    def tokens(self, text: PerturbedText) -> tuple[list[Token], str | None]:
        found = self._texts.get(text.pk)
        if found is None:
            tokens = hades_tokens(text.text)
            found = self._texts[text.pk] = (tokens, _text_problem(tokens))
            if len(self._texts) > self._kept:
                self._texts.popitem(last=False)
        else:
            self._texts.move_to_end(text.pk)
        return found


def _text_problem(tokens: list[Token]) -> str | None:
    """Why a text's tokens would not read back the same from a HaDes file, or None."""
    try:
        check_round_trip(tokens)
    except HadesUnwritable as error:
        return str(error)
    return None


def _checked_hades_line(item: PairItem, texts: _HadesTexts) -> str:
    """The item's HaDes line; raises HadesUnwritable, its text's problem first, when HaDes cannot carry it."""
    if _imported_hades_row(item) is not None:
        return hades_line(item)  # the imported line, as it came: nothing to tokenise
    tokens, text_problem = texts.tokens(item.perturbed)
    if text_problem:
        raise HadesUnwritable(text_problem)
    return hades_line(item, tokens)


def _spool_hades_lines(items: QuerySet[PairItem], spool: IO[str]) -> list[str]:
    """Write every item's HaDes line to ``spool`` in id order; what is wrong with each item HaDes cannot carry.

    Once an item is refused no more lines are written (the export is refused),
    but every item is still checked, so that the refusal names them all.
    """
    problems: list[str] = []
    texts = _HadesTexts(TEXTS_KEPT)
    for item in items.select_related("perturbed").iterator(chunk_size=CHUNK):
        try:
            line = _checked_hades_line(item, texts)
        except HadesUnwritable as error:
            problems.append(f"item {item.exported_id!r}: {error}")
            continue
        if not problems:
            spool.write(line + "\n")
    return problems


def _refusal(project: Project, problems: list[str]) -> ExportError:
    """The refusal of a HaDes export, naming every item HaDes cannot carry faithfully (the first MAX_MESSAGES)."""
    count = len(problems)
    listed = "; ".join(problems[:MAX_MESSAGES]) + (f"; and {count - MAX_MESSAGES} more" if count > MAX_MESSAGES else "")
    return ExportError(
        f"hades cannot carry {count} item{'s' if count > 1 else ''} of {project.slug!r} faithfully (the pairs "
        f"format carries any text): {listed}",
        field="format",
    )


def _hades_lines(project: Project, items: QuerySet[PairItem]) -> Iterator[str]:
    """Check every item and make its line now, refusing the export rather than write a wrong file; the lines after.

    The spool reads back exactly what was written: no newline translation and
    lines split at "\\n" only (a line holds none but its last), and any code
    point written back as it came.
    """
    spool = SpooledTemporaryFile(  # closed by _read_spool, or here on a refusal
        max_size=SPOOL_BYTES, mode="w+", encoding="utf-8", errors="surrogatepass", newline="\n"
    )
    try:
        problems = _spool_hades_lines(items, spool)
        if problems:
            raise _refusal(project, problems)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return _read_spool(spool)


def _read_spool(spool: IO[str]) -> Iterator[str]:
    with spool:
        yield from spool


def export_pairs(project: Project, fmt: str) -> str:
    """The whole export as JSONL text (``export_lines`` streams it instead)."""
    return "".join(export_lines(project, fmt))


def write_pairs_export(project: Project, fmt: str, out: Path) -> Path:
    """Write the export to one file, line by line."""
    if out.is_dir():
        raise ExportError(f"out: {out} is a directory; the {fmt} format writes one JSONL file")
    lines = export_lines(project, fmt)  # checks the format, the project and the items before a file is made
    first = next(lines, "")
    out.parent.mkdir(parents=True, exist_ok=True)
    with whole_file(out, "w", encoding="utf-8", newline="") as handle:
        handle.write(first)
        for line in lines:
            handle.write(line)
    return out
