"""The HaDes release format: ``replaced``, ``replaced_ids``, ``hallucination``, one item a line.

``replaced`` is the perturbed text, lower-cased and split into words with
spaces, the item's words wrapped in ``===`` (``===railway===``, or
``===restoration of the===`` for several words). ``replaced_ids`` is
[first, last], inclusive word indexes into ``replaced.split()``, the same with
or without the markers, so the markers are part of the words they wrap.
``hallucination`` is 1 (H), 0 (N) or -1 (unknown).

The perturbed text is the words without the markers joined by single spaces;
the item's span is the code points of words first..last in it. Rows with the
same unmarked text share one perturbed text; there is no original. Rows
labelled 1 or 0 become labelled items, -1 rows items in the pool. Each row is
kept as it came (the line's text, the parsed row, the file and the line
number) so an export gives it back byte for byte.
"""

from __future__ import annotations

from typing import Any

from annotate.models import PerturbedText
from annotate.services.ingest.checks import MAX_TEXT_CHARS, ImportFailed, _shown, described
from annotate.services.pairs.ingest.lines import Line, Problems, check_fields
from annotate.services.pairs.ingest.parsed import ParsedImport, ParsedItem, ParsedText

MARKER = "==="
HADES_REQUIRED = ("replaced", "replaced_ids", "hallucination")
HADES_LABELS = {1: "H", 0: "N", -1: ""}


def unmark(replaced: str, where: str) -> tuple[list[str], int, int]:
    """The words of ``replaced`` without the markers, and the indexes of the first and last marked word."""
    words = replaced.split()
    if any(len(word) >= len(MARKER) and not word.strip("=") for word in words):
        raise ImportFailed(
            f"{where}: field 'replaced' has a {MARKER} marker standing apart from a word; a marker is written "
            f"against the word it marks (===word===), so that replaced_ids count the same words with or without it"
        )
    opening = [i for i, word in enumerate(words) if word.startswith(MARKER)]
    closing = [i for i, word in enumerate(words) if word.endswith(MARKER)]
    if not opening and not closing:
        raise ImportFailed(f"{where}: field 'replaced' has no {MARKER} markers around the replaced words")
    if len(opening) != 1 or len(closing) != 1:
        raise ImportFailed(
            f"{where}: field 'replaced' must mark one span with one opening and one closing {MARKER}; "
            f"it has {len(opening)} opening and {len(closing)} closing"
        )
    first, last = opening[0], closing[0]
    if last < first:
        raise ImportFailed(f"{where}: field 'replaced' has its closing {MARKER} before the opening one")
    words[first] = words[first][len(MARKER):]
    words[last] = words[last][: -len(MARKER)]
    return words, first, last


def _replaced_ids(value: Any, words: list[str], first: int, last: int, where: str) -> None:
    if (
        not isinstance(value, list)
        or len(value) != 2
        or any(isinstance(v, bool) or not isinstance(v, int) for v in value)
    ):
        raise ImportFailed(f"{where}: field 'replaced_ids' must be [first, last], two whole numbers, found {described(value)}")
    if value != [first, last]:
        marked = " ".join(words[first : last + 1])
        raise ImportFailed(
            f"{where}: field 'replaced_ids' {value} does not match the {MARKER} markers, which wrap words "
            f"{first}..{last} ({_shown(marked)})"
        )


def _label(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or value not in HADES_LABELS:
        raise ImportFailed(f"{where}: field 'hallucination' must be 1, 0 or -1, found {described(value)}")
    return HADES_LABELS[value]


def _read_row(line: Line) -> tuple[ParsedItem, str]:
    row, where = line.row, line.where
    # A release row may carry more keys than these three: they are kept with the row and written back.
    check_fields(line, frozenset(row), HADES_REQUIRED, "hades")
    replaced = row["replaced"]
    if not isinstance(replaced, str):
        raise ImportFailed(f"{where}: field 'replaced' must be a string, found {described(replaced)}")
    if len(replaced) > MAX_TEXT_CHARS:
        raise ImportFailed(f"{where}: field 'replaced' has {len(replaced)} characters; the limit is {MAX_TEXT_CHARS}")
    words, first, last = unmark(replaced, where)
    _replaced_ids(row["replaced_ids"], words, first, last, where)
    label = _label(row["hallucination"], where)
    start = sum(len(word) + 1 for word in words[:first])
    end = start + len(" ".join(words[first : last + 1]))
    text = " ".join(words)
    item = ParsedItem(
        text_index=-1, external_id="", perturbed_start=start, perturbed_end=end, perturbed_words=text[start:end],
        label=label, line=line,
        imported_fields={"format": "hades", "file": line.file, "line": line.number, "row": row, "source_line": line.text},
    )
    return item, text


def parse_hades(lines: list[Line], problems: Problems) -> ParsedImport:
    parsed = ParsedImport()
    texts: dict[str, int] = {}
    for line in lines:
        try:
            item, text = _read_row(line)
        except ImportFailed as error:
            problems.add(str(error), line.at)
            continue
        index = texts.get(text)
        if index is None:
            index = texts[text] = len(parsed.texts)
            parsed.texts.append(ParsedText(text, PerturbedText.Source.HADES, None, "", line))
        item.text_index = index
        parsed.items.append(item)
    return parsed
