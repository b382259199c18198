"""Token-level alpha: every token of a summary is a unit, valued by the worst span covering it.

A token is a run of characters between white space, as English, Arabic or
Hindi write words, except in scripts written without spaces between words
(annotate.text.SCRIPTS_WITHOUT_SPACES: Han, Hiragana, Katakana, Bopomofo,
Thai, Lao, Khmer, Myanmar), where each character is a token of its own, with
the combining marks that follow it (a Thai vowel or tone mark, a kana voicing
mark, a variation selector: Unicode's grapheme extenders and spacing marks).
Otherwise a summary in Chinese, Japanese or Thai would be one unit. "北京new
地铁。" is 北 京 new 地 铁 。; the CJK punctuation and symbols of those
scripts (。「」・ー, from U+2E80 on) count as their characters, while a middle
dot, a caron or a combining accent shared with Latin text does not, so a text
without these scripts and their punctuation has its whitespace tokens. Korean
keeps its words (Hangul is written with spaces), though CJK punctuation in it
(「」。) is cut off as characters of its own.

Spans come as in annotate.agreement.spans; the alphas are computed on the
histogram path of annotate.agreement.alpha, since a project has millions of tokens.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterable, Sequence

import numpy as np
import regex

from annotate.agreement.alpha import _alphas_by_range, _per_batch_entries, _undefined_reason
from annotate.agreement.labels import AlphaResult
from annotate.agreement.schemes import _CODE, CATEGORIES, Scheme, parse_scheme
from annotate.agreement.spans import BatchSpans
from annotate.text import SCRIPTS_WITHOUT_SPACES

_RUN = re.compile(r"\S+")  # the standard library's \S: not str.isspace()
# A character that joins the one before it (UAX #29 grapheme extenders, spacing marks, ZWJ).
_JOINING = r"[\p{gcb=Extend}\p{gcb=SpacingMark}\p{gcb=ZWJ}]"
# A character of a script without spaces that starts a token: by its script, or by its script extensions from the
# CJK radicals (U+2E80) on; a joining character never starts one.
_ALONE = (
    "[["
    + "".join(rf"\p{{sc={script}}}" for script in SCRIPTS_WITHOUT_SPACES)
    + "[["
    + "".join(rf"\p{{scx={script}}}" for script in SCRIPTS_WITHOUT_SPACES)
    + r"]&&[\u2E80-\U0010FFFF]]]--"
    + _JOINING
    + "]"
)
# In a run of non-space characters: one such character with what joins it, or as much as holds none.
_TOKEN = regex.compile(rf"{_ALONE}{_JOINING}*|(?:(?!{_ALONE}).)+", regex.V1 | regex.DOTALL)
_SPACE, _OTHER, _OWN, _JOINER = range(4)  # kinds of code point in _token_bounds


def summary_tokens(text: str) -> list[tuple[int, int]]:
    """Tokens (see the module docstring) as (start, end) code-point offsets, end-exclusive."""
    tokens = []
    for run in _RUN.finditer(text):
        base = run.start()
        tokens.extend((base + token.start(), base + token.end()) for token in _TOKEN.finditer(run.group()))
    return tokens


@functools.cache
def _kinds() -> np.ndarray:
    """The kind of every code point, asked of the regex engines themselves (so tokens agree with summary_tokens)."""
    everything = "".join(map(chr, range(sys.maxunicode + 1)))
    kinds = np.full(sys.maxunicode + 1, _OTHER, dtype=np.uint8)
    for kind, pattern in ((_JOINER, regex.compile(_JOINING, regex.V1)), (_OWN, regex.compile(_ALONE, regex.V1))):
        kinds[[match.start() for match in pattern.finditer(everything)]] = kind
    kinds[[ord(character) for character in re.findall(r"\s", everything)]] = _SPACE
    return kinds


def _token_bounds(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(token starts, token ends, text starts) in one string joining the texts with newlines: summary_tokens of all."""
    joined = "\n".join(texts)
    codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    kind = _kinds()[codes]
    word = kind != _SPACE
    start = word.copy()
    start[1:] &= ~word[:-1]  # the first character of a run
    own = kind == _OWN
    if own.any():
        # A character of such a script starts a token, and so does the first character after one and its joiners.
        joiner = kind == _JOINER
        holder = np.cumsum(~joiner) - 1  # which non-joining character each character is or joins (-1: none)
        in_own = np.concatenate((own[~joiner], [False]))[holder]  # a joiner opening the text joins nothing
        start[1:] |= word[1:] & ~joiner[1:] & in_own[:-1]
        start |= own
    ends = np.flatnonzero(np.concatenate(([False], word)) & np.concatenate((~word | start, [True])))
    lengths = np.fromiter((len(text) for text in texts), dtype=np.int64, count=len(texts))
    text_starts = np.concatenate(([0], np.cumsum(lengths + 1)[:-1])) if len(texts) else np.zeros(0, dtype=np.int64)
    return np.flatnonzero(start), ends, text_starts


def token_alpha(batches: Iterable[BatchSpans], scheme: str | Scheme = "C|B|Q|U") -> AlphaResult:
    """Nominal alpha with every summary token as a unit.

    A token's value from one annotator is the worst category among that
    annotator's spans covering at least one of its characters, C when none
    does; then mapped through the scheme (default: all four categories).
    Pooled over every token of every batch; per_batch as in compute_alpha.

    Computed with arrays: each span covers a contiguous run of its summary's
    tokens, so coverage is a difference array over (annotator, token) cells.
    """
    scheme = parse_scheme(scheme)
    lookup = scheme.lookup()
    groups = len(scheme.groups)
    batches = list(batches)
    names = [batch.name for batch in batches]
    rosters = [list(dict.fromkeys(batch.annotators)) for batch in batches]
    texts: list[str] = []
    text_batch: list[int] = []
    covering: list[tuple[int, int, int, int, int]] = []  # (text, roster slot, start, end, code)
    for index, (batch, roster) in enumerate(zip(batches, rosters, strict=True)):
        slot_of = {annotator: slot for slot, annotator in enumerate(roster)}
        text_of = {}
        for key, text in batch.summaries.items():
            text_of[key] = len(texts)
            texts.append(text)
            text_batch.append(index)
        for (annotator, key), spans in batch.spans.items():
            slot, text = slot_of.get(annotator), text_of.get(key)
            if slot is None or text is None:
                continue
            for start, end, category in spans:
                if category is None:
                    continue
                if category not in _CODE:
                    raise ValueError(f"batch {batch.name!r}: span category {category!r} is not one of C, B, Q, U")
                covering.append((text, slot, start, end, _CODE[category]))
    token_starts, token_ends, text_starts = _token_bounds(texts)
    # Tokens and cells, batch after batch; a batch's cells are roster slot x its tokens.
    batch_of_text = np.array(text_batch, dtype=np.int64)
    text_of_token = np.searchsorted(text_starts, token_starts, side="right") - 1
    tokens_per_batch = np.bincount(batch_of_text[text_of_token], minlength=len(batches))
    first_token = np.concatenate(([0], np.cumsum(tokens_per_batch)))
    roster_sizes = np.array([len(roster) for roster in rosters], dtype=np.int64)
    first_cell = np.concatenate(([0], np.cumsum(tokens_per_batch * roster_sizes)))
    cell_count = int(first_cell[-1])
    cell_token = np.concatenate(
        [np.tile(np.arange(first_token[b], first_token[b + 1]), roster_sizes[b]) for b in range(len(batches))]
        or [np.zeros(0, dtype=np.int64)]
    )
    worst = np.zeros(cell_count, dtype=np.int8)
    if covering:
        text, slot, start, end, code = np.array(covering, dtype=np.int64).T
        lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
        begin = text_starts[text] + np.clip(start, 0, lengths[text])
        finish = text_starts[text] + np.clip(end, 0, lengths[text])
        first = np.searchsorted(token_ends, begin, side="right")  # first token ending after the span starts
        last = np.searchsorted(token_starts, finish, side="left")  # tokens starting before the span ends
        batch = batch_of_text[text]
        base = first_cell[batch] + slot * tokens_per_batch[batch] - first_token[batch]
        some = first < last
        for value in range(1, len(CATEGORIES)):  # C (0) is the default
            chosen = some & (code == value)
            edges = np.bincount(base[chosen] + first[chosen], minlength=cell_count + 1)
            edges -= np.bincount(base[chosen] + last[chosen], minlength=cell_count + 1)
            worst[np.cumsum(edges[:-1]) > 0] = value  # ascending severity: the worst covering span wins
    values = lookup[worst]
    kept = values >= 0
    counts = np.bincount(
        cell_token[kept] * groups + values[kept], minlength=len(token_starts) * groups
    ).reshape(len(token_starts), groups)
    bounds = [(int(first_token[b]), int(first_token[b + 1])) for b in range(len(batches))]
    per_batch = _per_batch_entries(names, rosters, _alphas_by_range(counts, bounds, scheme, "nominal"), scheme)
    (value, reason, units), = _alphas_by_range(counts, [(0, len(counts))], scheme, "nominal")
    if reason is not None:
        reason = _undefined_reason(reason, rosters, scheme)
    annotators = len({person for roster in rosters for person in roster})
    return AlphaResult(value, reason, units, annotators, per_batch)
