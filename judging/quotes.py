"""The passages a judge's reasoning quotes, found in the source and the output; and the texts cut into pieces
where those passages and the output's sentences begin and end, for the audit page. Pure: no Django imports.

Offsets are Unicode code points (Python's string indices), end-exclusive, like every offset FaithLab stores.

What counts as a quote: text between straight or curly double quotes ("…", “…”, «…»), between backticks,
or between single quotes ('…', ‘…’) that open after a space or punctuation and close before one, so the
apostrophes of "the source's" or "don't" never open or close a quote. Single-quoted passages inside a
double-quoted one are not looked for again. A quote needs at least MIN_QUOTE_CHARS letters or digits.

How a quote is found: case-insensitively (str.casefold), with every run of white space read as one space,
curly quotes and apostrophes read as straight ones and dashes as "-"; a quote that starts or ends with a
word character must start or end on a word boundary of the text too ("art" is not found in "started").
Trailing punctuation inside the quote marks ("… on Tuesday.") is dropped when the quote is not found with
it, and a quote with an ellipsis ("the mayor … March") is looked for piece by piece. Each occurrence in
each text is one result; a quote found in neither text is one result with ``where`` None — worth showing:
the judge may have quoted something that is not there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

MIN_QUOTE_CHARS = 3
MAX_QUOTE_CHARS = 600  # longer "quotes" are a stray quote mark pairing with one far away
MAX_OCCURRENCES = 10  # per quote and text: a short quote found everywhere highlights nothing useful

_DOUBLE = re.compile(r'"([^"]+)"|“([^”“]+)”|«([^»«]+)»|„([^“”„]+)[“”]|`([^`]+)`')
# An opening single quote follows the start or a non-word character and precedes a non-space; the closing
# one follows a non-space and precedes the end or a non-word character. "source's" has neither.
_SINGLE = re.compile(r"(?<![\w'‘’])['‘](?=\S)(.+?)(?<=\S)['’](?![\w'’])", re.DOTALL)
_ELLIPSIS = re.compile(r"\.\.\.+|…|\[\.\.\.\]|\[…\]")
_TRAILING = ".,;:!?"
_FOLDS = {
    "‘": "'", "’": "'", "‚": "'", "‛": "'", "′": "'",
    "“": '"', "”": '"', "„": '"', "‟": '"', "″": '"',
    "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "―": "-", "−": "-",
}


@dataclass(frozen=True)
class Folded:
    """A text read for matching, and for each of its characters the code point of the original it came from."""

    text: str
    origin: tuple[int, ...]  # len(text) + 1 entries: the last is the original's length


def fold(text: str) -> Folded:
    """Casefolded, white space runs as one space, curly quotes straight, dashes as "-"."""
    out: list[str] = []
    origin: list[int] = []
    in_space = False
    for index, char in enumerate(text):
        if char.isspace():
            if not in_space:
                out.append(" ")
                origin.append(index)
            in_space = True
            continue
        in_space = False
        # casefold() may give several characters (ß -> ss): each points back at the one it came from.
        for piece in _FOLDS.get(char, char).casefold():
            out.append(piece)
            origin.append(index)
    origin.append(len(text))
    return Folded("".join(out), tuple(origin))


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


@dataclass(frozen=True)
class QuotedPassage:
    """A passage of the reasoning between quote marks: its text, and where it stands in the reasoning."""

    text: str
    start: int
    end: int


def quoted_passages(reasoning: str) -> list[QuotedPassage]:
    """The passages the reasoning quotes, in reading order, each once (repeats of the same text dropped)."""
    found: list[QuotedPassage] = []
    taken: list[tuple[int, int]] = []
    for match in _DOUBLE.finditer(reasoning):
        group = next(index for index in range(1, 6) if match.group(index) is not None)
        found.append(QuotedPassage(match.group(group), match.start(group), match.end(group)))
        taken.append((match.start(), match.end()))
    for match in _SINGLE.finditer(reasoning):
        if any(start <= match.start() < end for start, end in taken):
            continue
        found.append(QuotedPassage(match.group(1), match.start(1), match.end(1)))
    found.sort(key=lambda passage: passage.start)
    seen: set[str] = set()
    passages = []
    for passage in found:
        key = fold(passage.text).text.strip()
        if len(passage.text) > MAX_QUOTE_CHARS or sum(c.isalnum() for c in key) < MIN_QUOTE_CHARS or key in seen:
            continue
        seen.add(key)
        passages.append(passage)
    return passages


def _occurrences(needle: str, haystack: Folded, text: str) -> list[tuple[int, int]]:
    """Where the folded needle occurs in the folded text, as code-point ranges of the original text."""
    spots: list[tuple[int, int]] = []
    if not needle:
        return spots
    at = haystack.text.find(needle)
    while at >= 0 and len(spots) < MAX_OCCURRENCES:
        end = at + len(needle)
        start_cp, end_cp = haystack.origin[at], haystack.origin[end - 1] + 1
        starts_clean = not _is_word(needle[0]) or start_cp == 0 or not _is_word(text[start_cp - 1])
        ends_clean = not _is_word(needle[-1]) or end_cp == len(text) or not _is_word(text[end_cp])
        if starts_clean and ends_clean:
            spots.append((start_cp, end_cp))
            at = haystack.text.find(needle, end)
        else:
            at = haystack.text.find(needle, at + 1)
    return spots


def _needles(quote: str) -> list[list[str]]:
    """What to look for, best first: the quote whole, then without trailing punctuation, then its pieces
    around an ellipsis. Each entry is a list of needles that are all looked for."""
    whole = fold(quote).text.strip()
    tries = [[whole]]
    bare = whole.rstrip(_TRAILING + " ").lstrip(_TRAILING + " ")
    if bare != whole:
        tries.append([bare])
    pieces = [piece.strip(_TRAILING + " ") for piece in _ELLIPSIS.split(quote)]
    pieces = [fold(piece).text.strip() for piece in pieces]
    pieces = [piece for piece in pieces if sum(c.isalnum() for c in piece) >= MIN_QUOTE_CHARS]
    if len(pieces) > 1:
        tries.append(pieces)
    return tries


def find_quotes(reasoning: str, source: str, output: str) -> list[dict[str, Any]]:
    """Each passage the reasoning quotes, where it occurs in the source and in the output.

    One entry per occurrence: ``{"quote", "index", "where": "source" | "output", "start", "end",
    "reasoning_start", "reasoning_end"}`` (``index`` numbers the quotes of this reasoning from 0;
    ``reasoning_start``/``reasoning_end`` say where the quote stands in the reasoning). A quote found in
    neither text gives one entry with ``where``, ``start`` and ``end`` None.
    """
    texts = {"source": (source, fold(source)), "output": (output, fold(output))}
    results: list[dict[str, Any]] = []
    for index, passage in enumerate(quoted_passages(reasoning)):
        base = {
            "quote": passage.text,
            "index": index,
            "reasoning_start": passage.start,
            "reasoning_end": passage.end,
        }
        hits: list[dict[str, Any]] = []
        for needles in _needles(passage.text):
            per_needle = [
                [
                    {**base, "where": where, "start": start, "end": end}
                    for where, (text, folded) in texts.items()
                    for start, end in _occurrences(needle, folded, text)
                ]
                for needle in needles
            ]
            # The pieces around an ellipsis count only when every one of them is there.
            if all(per_needle):
                hits = sorted(
                    (hit for found in per_needle for hit in found), key=lambda hit: (hit["where"] != "source", hit["start"])
                )
                break
        results.extend(hits or [{**base, "where": None, "start": None, "end": None}])
    return results


# --------------------------------------------------------------------------- texts cut for rendering


@dataclass(frozen=True)
class Mark:
    """A highlighted range of a text (code points) and the id it is known by on the page."""

    start: int
    end: int
    id: str


def text_parts(
    text: str, sentences: Sequence[Sequence[int]] | None, marks: Iterable[Mark]
) -> list[dict[str, Any]]:
    """The text cut where sentences and marks begin and end.

    Returns parts in order, each ``{"sentence": index or None, "start", "end", "pieces": [{"text", "start",
    "end", "marks": [ids]}]}``: a part is one sentence (or the text between sentences, ``sentence`` None),
    its pieces the runs that carry the same marks. Joined, the pieces' texts are the text exactly.
    Sentence and mark ranges are clamped to the text; overlapping sentences keep the first.
    """
    length = len(text)
    spans: list[tuple[int, int, int]] = []
    last_end = 0
    for index, bounds in enumerate(sentences or []):
        start, end = max(0, min(int(bounds[0]), length)), max(0, min(int(bounds[1]), length))
        if end > start and start >= last_end:
            spans.append((start, end, index))
            last_end = end
    kept = [
        Mark(max(0, min(mark.start, length)), max(0, min(mark.end, length)), mark.id) for mark in marks
    ]
    kept = [mark for mark in kept if mark.end > mark.start]
    cuts = {0, length}
    for start, end, _ in spans:
        cuts.update((start, end))
    for mark in kept:
        cuts.update((mark.start, mark.end))
    bounds_sorted = sorted(cuts)

    parts: list[dict[str, Any]] = []
    span_at = 0
    for left, right in zip(bounds_sorted, bounds_sorted[1:], strict=False):
        while span_at < len(spans) and spans[span_at][1] <= left:
            span_at += 1
        sentence = spans[span_at][2] if span_at < len(spans) and spans[span_at][0] <= left else None
        ids = [mark.id for mark in kept if mark.start <= left and right <= mark.end]
        piece = {"text": text[left:right], "start": left, "end": right, "marks": ids}
        current = parts[-1] if parts else None
        if current is None or current["sentence"] != sentence:
            parts.append({"sentence": sentence, "start": left, "end": right, "pieces": [piece]})
            continue
        current["end"] = right
        previous = current["pieces"][-1]
        if previous["marks"] == ids:
            previous["text"] += piece["text"]
            previous["end"] = right
        else:
            current["pieces"].append(piece)
    return parts


def reasoning_pieces(reasoning: str, quotes: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reasoning cut around its quotes: ``[{"text", "quote": index or None, "found": ["source", ...]}]``
    (``found`` lists the texts the quote was found in, empty when neither)."""
    by_index: dict[int, dict[str, Any]] = {}
    for quote in quotes:
        entry = by_index.setdefault(
            quote["index"], {"start": quote["reasoning_start"], "end": quote["reasoning_end"], "found": []}
        )
        if quote["where"] and quote["where"] not in entry["found"]:
            entry["found"].append(quote["where"])
    pieces: list[dict[str, Any]] = []
    at = 0
    for index, entry in sorted(by_index.items(), key=lambda pair: pair[1]["start"]):
        if entry["start"] < at:
            continue
        if entry["start"] > at:
            pieces.append({"text": reasoning[at : entry["start"]], "quote": None, "found": []})
        pieces.append({"text": reasoning[entry["start"] : entry["end"]], "quote": index, "found": entry["found"]})
        at = entry["end"]
    if at < len(reasoning):
        pieces.append({"text": reasoning[at:], "quote": None, "found": []})
    return pieces
