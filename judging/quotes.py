"""The passages a judge's reasoning quotes, found in the source and the output; and the texts cut into pieces
where those passages and the output's sentences begin and end, for the audit page. Pure: no Django imports.

Offsets are Unicode code points (Python's string indices), end-exclusive, like every offset FaithLab stores.

What counts as a quote: text between straight or curly double quotes ("…", “…”, „…“, «…», and ”…“ the other way
round, as right-to-left typing leaves them), corner, book-title and angle brackets (「…」, 『…』, 《…》, 〈…〉),
double prime quotes (〝…〟), single guillemets (‹…›), Hebrew gershayim (״…״, never the one inside an acronym
such as צה״ל), between backticks, or between single quotes ('…', ‘…’) that open after a space or punctuation
and close before one, so the apostrophes of "the source's" or "don't" never open or close a quote.
Single-quoted passages inside a double-quoted one are not looked for again. A quote needs at least
MIN_QUOTE_CHARS letters or digits, or MIN_DENSE_QUOTE_CHARS Han, Kana or Hangul characters: one of those
says as much as a short Latin word, so "東京" is a quote where "it" is not.

How a quote is found: on a normalised form of both the quote and the text: canonically composed (NFC, so
"Inés" with a precomposed é matches "Ine\u0301s" with a combining accent), zero-width characters dropped,
case-insensitively (str.casefold), with every run of white space read as one space, curly quotes and
apostrophes read as straight ones and dashes as "-". Offsets are mapped back to the original text, so a
highlight covers exactly the original characters (an accent's combining mark included). A quote that starts
or ends with a word character must start or end on a word boundary of the text too ("art" is not found in
"started"), except in scripts written without spaces between words (Han, Kana, Thai, Lao, Khmer, Myanmar,
Tibetan…), where any place is a boundary ("北京大学" is found in "北京大学的研究人员"); no quote starts or ends
between a letter and its combining mark. Korean (Hangul) is written with spaces between words, and is read as
such, with one difference: particles and endings attach to the word before them (서울대학교에서 is 서울대학교 +
에서, NASA가 is NASA + 가), so a quote may end where Hangul follows ("서울대학교" is found in "서울대학교에서
발표했다", "NASA" in "NASA가"), while it still starts only on a word boundary ("대학" is not found inside
"서울대학교"). The price of not knowing Korean's particles: a quote that is the first part of a word is found at
that word's start ("서울대" in "서울대학교"), as a stem is found before its ending. Trailing punctuation inside
the quote marks ("… on Tuesday.", "北京大学。") is dropped when the quote is not found with it, and a quote with
an ellipsis ("the mayor … March") is looked for piece by piece. Each occurrence in each text is one result; a
quote found in neither text is one result with ``where`` None — worth showing: the judge may have quoted
something that is not there.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

MIN_QUOTE_CHARS = 3
MIN_DENSE_QUOTE_CHARS = 2  # Han, Kana and Hangul: one character is a syllable or a word, not a letter
MAX_QUOTE_CHARS = 600  # longer "quotes" are a stray quote mark pairing with one far away
MAX_OCCURRENCES = 10  # per quote and text: a short quote found everywhere highlights nothing useful

_DOUBLE = re.compile(
    r'"([^"]+)"|“([^”“]+)”|«([^»«]+)»|„([^“”„]+)[“”]|「([^「」]+)」|『([^『』]+)』|`([^`]+)`'
    # Book-title and angle brackets (Chinese, Japanese, Korean), the double prime quotes 〝…〟 (or 〝…〞), single
    # guillemets, and curly quotes the other way round (”…“), as right-to-left typing often leaves them.
    r"|《([^《》]+)》|〈([^〈〉]+)〉|〝([^〝〟〞]+)[〟〞]|‹([^‹›]+)›|”([^”“]+)“"
    # Hebrew gershayim open after a non-word character and close before one: inside a word they mark an
    # acronym (צה״ל, ארה״ב), which opens and closes nothing.
    r"|(?<!\w)״([^״]+)״(?!\w)"
)
# An opening single quote follows the start or a non-word character and precedes a non-space; the closing
# one follows a non-space and precedes the end or a non-word character. "source's" has neither.
_SINGLE = re.compile(r"(?<![\w'‘’])['‘](?=\S)(.+?)(?<=\S)['’](?![\w'’])", re.DOTALL)
_ELLIPSIS = re.compile(r"\.\.\.+|…|\[\.\.\.\]|\[…\]")
_TRAILING = ".,;:!?。，、；：！？．"
_FOLDS = {
    "‘": "'", "’": "'", "‚": "'", "‛": "'", "′": "'",
    "“": '"', "”": '"', "„": '"', "‟": '"', "″": '"',
    "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "―": "-", "−": "-",
}
# Invisible characters that sit inside words in pasted or generated text (zero-width space, non-joiner,
# joiner, word joiner, byte-order mark, soft hyphen): a quote typed without them must still be found.
_INVISIBLE = frozenset("\u200b\u200c\u200d\u2060\ufeff\u00ad")
_NO_COMPOSITION_BELOW = 0x300  # no character under U+0300 composes with the one before it (NFC)

# Scripts written without spaces between words: Thai, Lao, Tibetan, Myanmar, Khmer, Kana, Han (and the
# ideographic marks and phonetic letters used with them), their extensions and compatibility forms.
_UNSPACED_RANGES = (
    (0x0E00, 0x0EFF), (0x0F00, 0x0FFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x19E0, 0x19FF),
    (0x2E80, 0x2FDF), (0x3000, 0x30FF), (0x3100, 0x312F), (0x31A0, 0x31FF), (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF), (0xA9E0, 0xA9FF), (0xAA60, 0xAA7F), (0xF900, 0xFAFF), (0xFF66, 0xFF9F),
    (0x1AFF0, 0x1B16F), (0x20000, 0x323AF),
)
# Han, Kana and Hangul syllables: dense enough that MIN_DENSE_QUOTE_CHARS of them make a quote.
_DENSE_RANGES = (
    (0x3005, 0x3007), (0x3040, 0x30FF), (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
    (0xAC00, 0xD7A3), (0xF900, 0xFAFF), (0xFF66, 0xFF9F), (0x1B000, 0x1B16F), (0x20000, 0x323AF),
)

# Hangul: jamo, compatibility jamo, jamo extensions A and B, syllables, halfwidth forms. Spaced, but particles attach.
_HANGUL_RANGES = (
    (0x1100, 0x11FF), (0x3130, 0x318F), (0xA960, 0xA97F), (0xAC00, 0xD7A3), (0xD7B0, 0xD7FF), (0xFFA0, 0xFFDC),
)


def _in_ranges(char: str, ranges: tuple[tuple[int, int], ...]) -> bool:
    point = ord(char)
    return any(low <= point <= high for low, high in ranges)


def _is_unspaced(char: str) -> bool:
    """Whether the character belongs to a script written without spaces between words."""
    return _in_ranges(char, _UNSPACED_RANGES)


def _is_mark(char: str) -> bool:
    """A combining mark (accent, vowel sign): it belongs to the letter before it."""
    return unicodedata.category(char).startswith("M")


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_" or _is_mark(char)


def _long_enough(text: str) -> bool:
    """Whether a (folded) quote has enough letters or digits to be looked for: MIN_QUOTE_CHARS, or
    MIN_DENSE_QUOTE_CHARS Han, Kana or Hangul characters."""
    letters = [char for char in text if char.isalnum()]
    dense = sum(_in_ranges(char, _DENSE_RANGES) for char in letters)
    return len(letters) >= MIN_QUOTE_CHARS or dense >= MIN_DENSE_QUOTE_CHARS


@dataclass(frozen=True)
class Folded:
    """A text read for matching, and for each of its characters where in the original it came from.

    ``origin[i]`` is the first code point of the original that folded character ``i`` came from and
    ``ends[i]`` the end (exclusive) of those code points: a composed "é" made of "e" and a combining accent
    spans both. The last of ``origin``'s ``len(text) + 1`` entries is the original's length."""

    text: str
    origin: tuple[int, ...]
    ends: tuple[int, ...]


def _composes(cluster: str, char: str) -> bool:
    """Whether NFC joins ``char`` (a starter: combining class 0) to the cluster before it (Hangul jamo,
    some Indic vowel signs); a starter that does not join blocks anything after it from the cluster."""
    # A starter joins only the character just before it: a lone character and the starter already in NFC
    # did not join, the usual case, checked fast.
    if ord(char) < _NO_COMPOSITION_BELOW or (len(cluster) == 1 and unicodedata.is_normalized("NFC", cluster + char)):
        return False
    joined = unicodedata.normalize("NFC", cluster + char)
    return joined != unicodedata.normalize("NFC", cluster) + unicodedata.normalize("NFC", char)


def _clusters(text: str) -> list[tuple[str, int, int]]:
    """The text without its invisible characters, cut where NFC cannot join the pieces: each piece's
    characters, and the first and last-plus-one code points of the original it spans."""
    clusters: list[tuple[str, int, int]] = []
    # In a text already in NFC with nothing to drop, no starter joins the one before it: only marks extend.
    settled = _INVISIBLE.isdisjoint(text) and unicodedata.is_normalized("NFC", text)
    for index, char in enumerate(text):
        if char in _INVISIBLE:
            continue
        if clusters and (unicodedata.combining(char) or (not settled and _composes(clusters[-1][0], char))):
            chars, start, _ = clusters[-1]
            clusters[-1] = (chars + char, start, index + 1)
        else:
            clusters.append((char, index, index + 1))
    return clusters


def fold(text: str) -> Folded:
    """The text normalised for matching: NFC, invisible characters dropped, casefolded, white space runs as
    one space, curly quotes straight, dashes as "-"; each character mapped back to the original."""
    out: list[str] = []
    origin: list[int] = []
    ends: list[int] = []
    in_space = False
    for chars, start, end in _clusters(text):
        for char in unicodedata.normalize("NFC", chars):
            if char.isspace():
                if not in_space:
                    out.append(" ")
                    origin.append(start)
                    ends.append(end)
                in_space = True
                continue
            in_space = False
            # casefold() may give several characters (ß -> ss): each points back at the one it came from.
            for piece in _FOLDS.get(char, char).casefold():
                out.append(piece)
                origin.append(start)
                ends.append(end)
    origin.append(len(text))
    return Folded("".join(out), tuple(origin), tuple(ends))


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
        group = match.lastindex or 0  # each alternative has one group: the one that matched
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
        if len(passage.text) > MAX_QUOTE_CHARS or not _long_enough(key) or key in seen:
            continue
        seen.add(key)
        passages.append(passage)
    return passages


def _joins(left: str, right: str) -> bool:
    """Whether two neighbouring characters belong to one word: both word characters of a script written
    with spaces. In Han, Kana, Thai and the like, any place between two characters may end a word."""
    return _is_word(left) and _is_word(right) and not (_is_unspaced(left) or _is_unspaced(right))


def _is_hangul(char: str) -> bool:
    """A Hangul syllable or jamo: Korean, whose particles and endings attach to the word before them."""
    return _in_ranges(char, _HANGUL_RANGES)


def _bounded(folded: str, start: int, end: int) -> bool:
    """Whether folded[start:end] stands on word boundaries and cuts no letter from its combining mark. The end
    may also be where Hangul follows: a Korean particle or ending (서울대학교|에서, NASA|가), not a new word."""
    if start > 0 and (_is_mark(folded[start]) or _joins(folded[start - 1], folded[start])):
        return False
    if end == len(folded):
        return True
    if _is_mark(folded[end]):
        return False
    return not _joins(folded[end - 1], folded[end]) or _is_hangul(folded[end])


def _occurrences(needle: str, haystack: Folded) -> list[tuple[int, int]]:
    """Where the folded needle occurs in the folded text, as code-point ranges of the original text."""
    spots: list[tuple[int, int]] = []
    if not needle:
        return spots
    at = haystack.text.find(needle)
    while at >= 0 and len(spots) < MAX_OCCURRENCES:
        end = at + len(needle)
        if _bounded(haystack.text, at, end):
            spots.append((haystack.origin[at], haystack.ends[end - 1]))
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
    pieces = [piece for piece in pieces if _long_enough(piece)]
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
    texts = {"source": fold(source), "output": fold(output)}
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
                    for where, folded in texts.items()
                    for start, end in _occurrences(needle, folded)
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
