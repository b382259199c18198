"""Writing a text and one span of it in HaDes form: lower-cased tokens joined by single spaces, the span's wrapped
in ``===``, ``replaced_ids`` the first and last of them (DESIGN.md, "HaDes file format").

A reader takes the tokens back with ``replaced.split()``, so the tokens are
made to be exactly what that gives back, for any text:

- Whitespace (every character ``str.split()`` splits at, so NBSP, U+2028 and
  U+001C..U+001F too) separates tokens and is not part of them.
- A token is made of whole grapheme clusters (Unicode's user-perceived
  characters, UAX #29): a combining accent (NFD "e" + U+0301), a variation
  selector, a keycap or a ZWJ emoji sequence stays with the character it
  belongs to, so no token starts with half a character.
- These clusters are tokens of their own, as in the release's BERT basic
  tokenisation ("the u . s .", "19 - year - old"): punctuation (ASCII symbols
  and Unicode's P categories, so "£100m" stays one token); each character of
  a script written without spaces between words (Han, Hiragana, Katakana,
  Bopomofo, Thai, Lao, Khmer, Myanmar); and an emoji (shown as an emoji by
  default, or asking for it with U+FE0F, a flag, a keycap).
- Each token is lower-cased with ``str.lower()`` (Unicode's full lower-case
  mapping, the same for every language): "ß" stays "ß" (case folding would
  write "ss"), "İ" becomes "i̇" (i and U+0307), Greek final sigma is kept.
  Nothing else changes: accents are kept, NFC stays NFC and NFD stays NFD.

Why one token per character in Han, Kana and Thai runs rather than per word
as Intl.Segmenter or ICU cut them: BERT, whose tokenisation the release
uses, splits Han that way, so a HaDes model reads the same units; word
segmentation of these scripts rests on dictionaries that differ between ICU
versions (an export would change when a library does) and no pinned package
here provides it; and a character is the finest unit, so a span that starts
or ends inside a dictionary word is still marked exactly, where a word
tokeniser would mark more than the span. Korean writes spaces between words
and keeps its words whole.

Tokenising is idempotent (the tokens, joined by spaces, tokenise to
themselves), which ``check_round_trip`` confirms for each text exported, so
a HaDes import of the export gives back the same words.
"""

from __future__ import annotations

import re
from typing import Any

import regex

from annotate.text import SCRIPTS_WITHOUT_SPACES

Token = tuple[int, int, str]  # start, end (code points in the text, end-exclusive), the lower-cased token

MARKER = "==="
# What str.split() keeps: the standard library's \S is exactly "not str.isspace()".
_RUN = re.compile(r"\S+")
_OWN_SCRIPTS = "".join(rf"\p{{scx={script}}}" for script in SCRIPTS_WITHOUT_SPACES)  # as token alpha's units
# A cluster starting so is a token of its own: BERT's punctuation, a character of a script without spaces, an emoji.
_ALONE = (
    rf"(?:[!-/:-@\[-`{{-~\p{{P}}{_OWN_SCRIPTS}\p{{Emoji_Presentation}}\p{{Regional_Indicator}}]"
    r"|\p{Extended_Pictographic}\uFE0F|[0-9#*]\uFE0F?\u20E3)"
)
_TOKEN = regex.compile(rf"(?={_ALONE})\X|(?:(?!{_ALONE})\X)+")


class HadesUnwritable(ValueError):
    """A span or text the HaDes format cannot carry faithfully; the message says why (the caller names the item)."""


def hades_tokens(text: str) -> list[Token]:
    """The HaDes tokens of ``text`` (see the module docstring), in order, covering every non-space character."""
    tokens: list[Token] = []
    for run in _RUN.finditer(text):
        base = run.start()
        for token in _TOKEN.finditer(run.group()):
            start, end = token.span()
            tokens.append((base + start, base + end, token.group().lower()))
    return tokens


def check_round_trip(tokens: list[Token]) -> None:
    """Refuse tokens that, written and read back by a HaDes importer and tokenised again, would not be the same.

    The tokeniser is built so this holds; the check makes a surprise of
    Unicode's lower-casing a refusal rather than a file that reads back
    different words.
    """
    words = [word for _, _, word in tokens]
    again = [word for _, _, word in hades_tokens(" ".join(words))]
    if again != words:
        changed = next(
            (f"{old!r} reads back as {new!r}" for old, new in zip(words, again, strict=False) if old != new),
            f"{len(words)} tokens read back as {len(again)}",
        )
        raise HadesUnwritable(f"its text, lower-cased and split into HaDes tokens, does not read back the same: {changed}")


def _marked_token_problem(word: str) -> str | None:
    """Why ``word`` cannot carry a marker: a token of "=" only would run into it and be read as part of it."""
    if word and not word.strip("="):
        return (f"its span starts or ends with the token {word!r}, which a HaDes reader cannot tell from the "
                f"{MARKER} marker written against it")
    return None


def _touched(tokens: list[Token], text: str, start: int, end: int) -> tuple[int, int]:
    """The first and last token the span [start, end) overlaps; a span of whitespace alone touches none."""
    touched = [i for i, (s, e, _) in enumerate(tokens) if s < end and e > start]
    if not touched:
        raise HadesUnwritable(
            f"its span {text[start:end]!r} at {start}..{end} holds only whitespace, and HaDes marks whole words"
        )
    return touched[0], touched[-1]


def hades_row(
    text: str, start: int, end: int, hallucination: int, tokens: list[Token] | None = None
) -> dict[str, Any]:
    """The span [start, end) of ``text`` in HaDes form: the tokens it touches (whole) are the marked ones.

    ``tokens``: ``hades_tokens(text)`` when the caller already has them (the
    items of one perturbed text share them). Raises HadesUnwritable for a span
    HaDes cannot mark.
    """
    words = hades_tokens(text) if tokens is None else tokens
    first, last = _touched(words, text, start, end)
    marked = [word for _, _, word in words]
    for index in {first, last}:
        if (problem := _marked_token_problem(marked[index])) is not None:
            raise HadesUnwritable(problem)
    marked[first] = MARKER + marked[first]
    marked[last] = marked[last] + MARKER
    return {"replaced": " ".join(marked), "replaced_ids": [first, last], "hallucination": hallucination}
