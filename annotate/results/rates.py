"""Hallucination rates per generator and their ranks, from each sample's worst category.

Pure: no Django imports.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

RATE_COLUMNS: dict[str, frozenset[str]] = {
    "U": frozenset({"U"}),
    "U+Q": frozenset({"U", "Q"}),
    "U+Q+B": frozenset({"U", "Q", "B"}),
}


def _percent(part: int, whole: int) -> float:
    return round(100 * part / whole, 2)


def hallucination_rates(samples: Iterable[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """``{generator: {"n", "U", "U+Q", "U+Q+B"}}`` from (generator, worst category) pairs.

    The category is the worst label over all the batch's annotators; a rate is
    the share of the generator's samples whose category is in the column's set,
    in percent rounded to 2 decimals. Generators are in name order.
    """
    pairs = Counter(samples)  # one pass at C speed; 100,000 samples have a few dozen distinct pairs
    totals: Counter[str] = Counter()
    hits: dict[str, Counter[str]] = defaultdict(Counter)
    for (generator, category), count in pairs.items():
        totals[generator] += count
        for column, members in RATE_COLUMNS.items():
            if category in members:
                hits[generator][column] += count
    return {
        generator: {"n": totals[generator]}
        | {column: _percent(hits[generator][column], totals[generator]) for column in RATE_COLUMNS}
        for generator in sorted(totals)
    }


def rank_generators(rates: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """``{column: {generator: rank}}``: rank 1 = lowest rate; equal rates share a rank (1, 2, 2, 4).

    Ranks compare the rates as reported (rounded), so generators that show the
    same number get the same rank.
    """
    ranks: dict[str, dict[str, int]] = {}
    for column in RATE_COLUMNS:
        ordered = sorted(rates, key=lambda generator: (rates[generator][column], generator))
        column_ranks: dict[str, int] = {}
        for position, generator in enumerate(ordered, start=1):
            previous = ordered[position - 2] if position > 1 else None
            if previous is not None and rates[previous][column] == rates[generator][column]:
                column_ranks[generator] = column_ranks[previous]
            else:
                column_ranks[generator] = position
        ranks[column] = column_ranks
    return ranks
