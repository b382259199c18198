"""Whole characters: where a text's grapheme clusters begin and end (no Django imports).

A grapheme cluster is what a reader sees as one character: an emoji sequence joined by ZWJ, a flag's two regional
indicators, a letter with its combining accents, CR LF. The span page's caret and selection move by them
(static/annotate/boundaries.js, with the browser's Intl.Segmenter); ``regex``'s ``\\X`` follows the same Unicode
rules (UAX #29, extended clusters) on the server.
"""

from __future__ import annotations

from collections.abc import Iterable

import regex

_CLUSTER = regex.compile(r"\X", regex.DOTALL)


def first_split(text: str, offsets: Iterable[int]) -> tuple[int, int, int] | None:
    """The first of ``offsets`` (code points, each within 0..len(text)) that falls inside a grapheme cluster of
    ``text``, as (offset, the cluster's start, its end); None when every one lies between two whole characters."""
    wanted = sorted(set(offsets))
    if not wanted:
        return None
    # Clusters are found from the text's start: a flag's pairing depends on every regional indicator before it.
    for match in _CLUSTER.finditer(text):
        start, end = match.span()
        if start >= wanted[-1]:
            break
        for offset in wanted:
            if start < offset < end:
                return offset, start, end
    return None
