"""Nested percentage sets of synthetic hallucinations ("On a scale from 1 to 5"). Pure: no Django imports.

An output of n sentences gets, per hallucination type, a seeded order of its
sentence indices; the version with k sentences replaced swaps in the rewrites
of the first k indices of that order, so each version contains the previous
one's replacements (nested) and percent = 100 k / n (0, 20, ..., 100 for n = 5).
The 0% version is the gold output itself, shared by both types.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

GOLD = "gold"
INTRINSIC = "intrinsic"
EXTRINSIC = "extrinsic"
HALLUCINATION_TYPES = (INTRINSIC, EXTRINSIC)
DEFAULT_SENTENCES_PER_OUTPUT = 5


@dataclass(frozen=True)
class PlannedItem:
    """One version of an output: `replaced` lists the replaced sentence indices in the order they were drawn."""

    type: str
    percent: int
    replaced: tuple[int, ...]
    text: str


def ineligibility(sentence_count: int, sentences_per_output: int = DEFAULT_SENTENCES_PER_OUTPUT) -> str | None:
    """Why an output cannot enter a set (None when it can): the percentage steps need exactly n sentences."""
    if sentence_count != sentences_per_output:
        noun = "sentence" if sentence_count == 1 else "sentences"
        return f"has {sentence_count} {noun}, not {sentences_per_output}"
    return None


def replacement_order(seed: int, sample_key: str, hallucination_type: str, sentence_count: int) -> list[int]:
    """The seeded order in which sentences are replaced for one (output, type).

    random.Random seeded with a string hashes it with SHA-512, so the order is
    the same in every process (Python's own hash() of a str is salted per run).
    """
    order = list(range(sentence_count))
    random.Random(f"{seed}:{sample_key}:{hallucination_type}").shuffle(order)
    return order


def percent_for(replaced_count: int, sentence_count: int) -> int:
    """100 k / n, whole: 0, 20, ..., 100 for five sentences (the only sets the design builds)."""
    return round(100 * replaced_count / sentence_count)


def percent_steps(sentences_per_output: int = DEFAULT_SENTENCES_PER_OUTPUT) -> list[int]:
    return [percent_for(k, sentences_per_output) for k in range(sentences_per_output + 1)]


def replace_spans(text: str, spans: Sequence[Sequence[int]], rewrites: Mapping[int, str]) -> str:
    """The text with sentence i's span [start, end) (code points) replaced by rewrites[i]; the rest untouched."""
    pieces: list[str] = []
    cursor = 0
    for index, (start, end) in sorted(enumerate(spans), key=lambda pair: pair[1][0]):
        if index not in rewrites:
            continue
        if start < cursor or end < start or end > len(text):
            raise ValueError(f"sentence {index} span [{start}, {end}) overlaps another or leaves the text")
        pieces.append(text[cursor:start])
        pieces.append(rewrites[index])
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def marked_pieces(
    text: str, spans: Sequence[Sequence[int]], rewrites: Mapping[int, str], replaced: Sequence[int]
) -> list[dict[str, object]]:
    """The item's text in pieces for display: {"text", "order"}, order = 1.. for the k-th replaced sentence, else None.

    Joined, the pieces give exactly replace_spans(text, spans, the replaced rewrites).
    """
    rank = {index: position for position, index in enumerate(replaced, start=1)}
    pieces: list[dict[str, object]] = []
    cursor = 0
    for index, (start, end) in sorted(enumerate(spans), key=lambda pair: pair[1][0]):
        if index not in rank:
            continue
        if start > cursor:
            pieces.append({"text": text[cursor:start], "order": None})
        pieces.append({"text": rewrites[index], "order": rank[index], "sentence": index})
        cursor = end
    if cursor < len(text):
        pieces.append({"text": text[cursor:], "order": None})
    return pieces


def plan_items(
    text: str,
    spans: Sequence[Sequence[int]],
    rewrites: Mapping[str, Mapping[int, str]],
    *,
    seed: int,
    sample_key: str,
) -> list[PlannedItem]:
    """The gold item, then for each type with a rewrite of every sentence, the items at 100 k / n for k = 1..n.

    A type with any sentence missing from `rewrites[type]` gets no items: a
    nested set with a hole would not be the set the seed says.
    """
    count = len(spans)
    items = [PlannedItem(GOLD, 0, (), text)]
    for hallucination_type in HALLUCINATION_TYPES:
        written = rewrites.get(hallucination_type, {})
        if any(index not in written for index in range(count)):
            continue
        order = replacement_order(seed, sample_key, hallucination_type, count)
        for k in range(1, count + 1):
            chosen = tuple(order[:k])
            items.append(PlannedItem(
                hallucination_type,
                percent_for(k, count),
                chosen,
                replace_spans(text, spans, {index: written[index] for index in chosen}),
            ))
    return items


def rewrite_problem(original: str, rewritten: object) -> str | None:
    """Why a rewrite cannot be used (None when it can): not text, empty, or the original sentence unchanged."""
    if not isinstance(rewritten, str):
        return f'"rewritten" is not text (got {type(rewritten).__name__})'
    if not rewritten.strip():
        return "the rewrite is empty"
    if " ".join(rewritten.split()) == " ".join(original.split()):
        return "the rewrite is identical to the original sentence"
    return None
