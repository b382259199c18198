"""Sentence splitting with code-point offsets. Pure: no Django imports."""

from __future__ import annotations

import functools

import pysbd


@functools.cache
def _segmenter() -> pysbd.Segmenter:
    return pysbd.Segmenter(language="en", clean=False, char_span=True)


def split_sentences(text: str) -> list[list[int]]:
    """[[start, end], ...] in code points, end-exclusive, trailing white space trimmed.

    Lines are segmented one at a time: pysbd slows down on very long inputs,
    and a line break always ends a sentence in the texts we see.
    """
    spans: list[list[int]] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        if line.strip():
            for piece in _segmenter().segment(line):
                start, end = offset + piece.start, offset + piece.end
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
