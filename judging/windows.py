"""Sliding windows over the reference for NLI judges (DESIGN.md, "LLM judges and audit"): pure arithmetic.

An NLI model reads at most ``max_length`` tokens, but references are often
longer. Only the reference is windowed, never the hypothesis; each window is
the model's pair template around a slice of the reference and the whole
hypothesis (BERT/DeBERTa-v2: ``[CLS] overlap + segment [SEP] hypothesis [SEP]``),
and the pair's score is the max over its windows.

No torch, no tokenizer, no Django: token ids in, token ids out. The caller
(judging/judges/nli.py) reads the template off the tokenizer once
(judging/clients/nli.py) and hands plain lists here.
"""

from __future__ import annotations

from dataclasses import dataclass


def reference_windows(
    reference_len: int, hypothesis_len: int, *, max_length: int = 512, overlap: int = 32, specials: int = 3
) -> list[tuple[int, int]]:
    """Token ranges ``[start, end)`` into the reference tokens, one per window, in order.

    DESIGN.md's rule, literally: the reference is cut into segments of
    ``segment = max_length - specials - hypothesis_len - overlap`` tokens, and
    each window is the last ``overlap`` tokens of the segment before (none for
    the first) followed by its own segment. So window k covers
    ``[max(0, k * segment - overlap), min((k + 1) * segment, reference_len))``:
    the first window holds ``segment`` tokens, later ones ``segment + overlap``,
    consecutive windows share exactly ``overlap`` tokens, every reference token
    is in some window, and with the special tokens and the whole hypothesis no
    window passes ``max_length``.

    A reference of at most ``segment`` tokens (including an empty one, which
    gives the single window ``(0, 0)``) is one window. When the hypothesis
    leaves no room for a segment after the overlap, a reference that still fits
    whole beside it is one window too: no windowing is needed, so none is done.

    Raises ValueError naming the lengths when the hypothesis (plus the special
    tokens) leaves no room for reference tokens, or when the reference needs
    several windows and the hypothesis plus the overlap leave no room for a
    new segment: such a pair gets an error, never a number.
    """
    if reference_len < 0 or hypothesis_len < 0:
        raise ValueError(f"token counts cannot be negative (reference {reference_len}, hypothesis {hypothesis_len})")
    if overlap < 0:
        raise ValueError(f"the window overlap cannot be negative (got {overlap})")
    if specials < 0:
        raise ValueError(f"the number of special tokens cannot be negative (got {specials})")
    budget = max_length - specials - hypothesis_len
    if budget < 0 or (reference_len > 0 and budget < 1):
        raise ValueError(
            f"the hypothesis has {hypothesis_len} tokens; with {specials} special tokens it leaves no room for "
            f"reference tokens in a window of {max_length} tokens (the hypothesis is never truncated)"
        )
    segment = budget - overlap
    if segment < 1:
        if reference_len <= budget:
            return [(0, reference_len)]
        raise ValueError(
            f"the reference has {reference_len} tokens and needs several windows, but a hypothesis of "
            f"{hypothesis_len} tokens, {specials} special tokens and an overlap of {overlap} tokens leave no "
            f"room for new reference tokens in a window of {max_length} tokens (segment length {segment})"
        )
    if reference_len <= segment:
        return [(0, reference_len)]
    return [
        (max(0, start - overlap), min(start + segment, reference_len))
        for start in range(0, reference_len, segment)
    ]


@dataclass(frozen=True)
class PairTemplate:
    """Where a tokenizer puts its special tokens around a (reference, hypothesis) pair.

    Every pair template we know has the shape ``prefix A middle B suffix``:
    BERT and DeBERTa-v2 ``[CLS] A [SEP] B [SEP]`` (3 specials), RoBERTa and
    DeBERTa-v1 ``<s> A </s></s> B </s>`` (4), T5 ``A </s> B </s>`` (2).
    ``specials`` is the count that ``reference_windows`` needs. Token type ids
    are kept only for tokenizers that produce them (``*_types`` None otherwise).
    """

    prefix: tuple[int, ...]
    middle: tuple[int, ...]
    suffix: tuple[int, ...]
    prefix_types: tuple[int, ...] | None = None
    reference_type: int = 0
    middle_types: tuple[int, ...] | None = None
    hypothesis_type: int = 0
    suffix_types: tuple[int, ...] | None = None

    @property
    def specials(self) -> int:
        return len(self.prefix) + len(self.middle) + len(self.suffix)

    @property
    def has_token_types(self) -> bool:
        return self.prefix_types is not None

    def build(self, reference_ids: list[int], hypothesis_ids: list[int]) -> tuple[list[int], list[int] | None]:
        """(input ids, token type ids or None) of one window: the template around a reference slice and the hypothesis."""
        input_ids = [*self.prefix, *reference_ids, *self.middle, *hypothesis_ids, *self.suffix]
        if self.prefix_types is None or self.middle_types is None or self.suffix_types is None:
            return input_ids, None
        token_types = [
            *self.prefix_types,
            *[self.reference_type] * len(reference_ids),
            *self.middle_types,
            *[self.hypothesis_type] * len(hypothesis_ids),
            *self.suffix_types,
        ]
        return input_ids, token_types


def template_from_probe(
    pair_ids: list[int], pair_types: list[int] | None, reference_ids: list[int], hypothesis_ids: list[int]
) -> PairTemplate:
    """Read the template off one encoded probe pair.

    ``pair_ids`` (and ``pair_types``) are what the tokenizer made of a probe
    (reference, hypothesis) with its special tokens; ``reference_ids`` and
    ``hypothesis_ids`` are the same two texts encoded without them. Raises
    ValueError when the pair is not ``prefix A middle B suffix``.
    """
    if not reference_ids or not hypothesis_ids:
        raise ValueError("the probe texts must each give at least one token")
    a_len, b_len = len(reference_ids), len(hypothesis_ids)
    for a_start in range(len(pair_ids) - a_len + 1):
        if pair_ids[a_start:a_start + a_len] != reference_ids:
            continue
        for b_start in range(a_start + a_len, len(pair_ids) - b_len + 1):
            if pair_ids[b_start:b_start + b_len] != hypothesis_ids:
                continue
            prefix = slice(0, a_start)
            middle = slice(a_start + a_len, b_start)
            suffix = slice(b_start + b_len, len(pair_ids))
            if pair_types is None:
                return PairTemplate(tuple(pair_ids[prefix]), tuple(pair_ids[middle]), tuple(pair_ids[suffix]))
            if len(pair_types) != len(pair_ids):
                raise ValueError(f"the probe has {len(pair_ids)} token ids but {len(pair_types)} token type ids")
            return PairTemplate(
                tuple(pair_ids[prefix]), tuple(pair_ids[middle]), tuple(pair_ids[suffix]),
                prefix_types=tuple(pair_types[prefix]), reference_type=pair_types[a_start],
                middle_types=tuple(pair_types[middle]), hypothesis_type=pair_types[b_start],
                suffix_types=tuple(pair_types[suffix]),
            )
    raise ValueError("the encoded pair does not contain the two probe texts in order: its template cannot be read")
