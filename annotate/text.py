"""Sentence splitting with code-point offsets, and the scripts written without spaces. Pure: no Django imports."""

from __future__ import annotations

import functools

import pysbd
import regex

# Scripts written without spaces between words: each of their characters is a unit of its own in token-level
# alpha (annotate.agreement.tokens) and a token of its own in the HaDes export (annotate.services.pairs.hades_text).
# Korean (Hangul) writes spaces between words and is not one of them.
SCRIPTS_WITHOUT_SPACES = ("Han", "Hiragana", "Katakana", "Bopomofo", "Thai", "Lao", "Khmer", "Myanmar")

# Full stops and question marks pysbd's English rules do not know, each always the end of a sentence: the
# Devanagari danda and double danda, the Arabic question mark, the Arabic (Urdu) full stop, the Armenian, Ethiopic
# and Myanmar full stops. A sentence ends after the mark, after any more marks and closing quotes or brackets.
# (CJK 。！？ are pysbd's already.)
_FULL_STOPS = "\u0964\u0965\u061F\u06D4\u0589\u1362\u104B"
_SENTENCE_END = regex.compile(rf"[{_FULL_STOPS}][{_FULL_STOPS}.!?\p{{Pe}}\p{{Pf}}\"']*")


@functools.cache
def _segmenter() -> pysbd.Segmenter:
    return pysbd.Segmenter(language="en", clean=False, char_span=True)


def _pieces(line: str) -> list[tuple[int, int]]:
    """pysbd's sentences of one line, each cut again after every mark of _FULL_STOPS inside it."""
    pieces: list[tuple[int, int]] = []
    for piece in _segmenter().segment(line):
        start = piece.start
        for mark in _SENTENCE_END.finditer(line, piece.start, piece.end):
            if mark.end() < piece.end:
                pieces.append((start, mark.end()))
                start = mark.end()
        pieces.append((start, piece.end))
    return pieces


def split_sentences(text: str) -> list[list[int]]:
    """[[start, end], ...] in code points, end-exclusive, trailing white space trimmed.

    Lines are segmented one at a time: pysbd slows down on very long inputs,
    and a line break always ends a sentence in the texts we see. pysbd cuts
    with its English rules (CJK 。！？ included); a Hindi, Arabic, Urdu,
    Armenian, Ethiopic or Burmese full stop or question mark ends a sentence
    too (_FULL_STOPS): pysbd's sentence is cut in two there, its characters
    all kept, so a text covers the characters it covered before.
    """
    spans: list[list[int]] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        if line.strip():
            for first, last in _pieces(line):
                start, end = offset + first, offset + last
                while end > start and text[end - 1].isspace():
                    end -= 1
                while start < end and text[start].isspace():
                    start += 1
                if end > start:
                    spans.append([start, end])
        offset += len(line)
    return spans


def utf16_length(text: str) -> int:
    """How many UTF-16 code units the browser counts for text."""
    return len(text.encode("utf-16-le")) // 2
