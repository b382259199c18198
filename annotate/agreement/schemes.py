"""Label schemes: which categories count, merged how, and the levels and aggregates alpha takes.

A scheme (``C+B|Q|U``) maps each FaithBench category to a value or drops it;
every alpha in this package is computed under one. The category order and
codes (C=0 .. U=3, severity order) that the other modules code labels with
live here too, so there is one place that says what a category is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from annotate.taxonomy import SEVERITY

CATEGORIES: tuple[str, ...] = ("C", "B", "Q", "U")  # severity order; index = code
_CODE: dict[str, int] = {category: SEVERITY[category] for category in CATEGORIES}
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval")
AGGREGATES: tuple[str, ...] = ("pooled", "batch-mean")


class SchemeError(ValueError):
    """A label scheme string that cannot be read."""


class Scheme(Mapping[str, int | None]):
    """Category letter -> value (its group's position) or None when the scheme drops it.

    ``Scheme(("C", "B"), ("Q",), ("U",))`` is ``C+B|Q|U``: C and B are 0, Q 1, U 2.
    """

    def __init__(self, *groups: Sequence[str]) -> None:
        self.groups: tuple[tuple[str, ...], ...] = tuple(tuple(group) for group in groups)
        self._values: dict[str, int | None] = dict.fromkeys(CATEGORIES)
        for position, group in enumerate(self.groups):
            for category in group:
                self._values[category] = position

    def __getitem__(self, category: str) -> int | None:
        return self._values[category]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Scheme({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scheme) and other.groups == self.groups

    def __hash__(self) -> int:
        return hash(self.groups)

    @property
    def text(self) -> str:
        """Canonical spelling, e.g. ``C+B|Q|U``."""
        return "|".join(self.group_name(position) for position in range(len(self.groups)))

    def group_name(self, position: int) -> str:
        return "+".join(self.groups[position])

    @property
    def dropped(self) -> tuple[str, ...]:
        return tuple(category for category in CATEGORIES if self._values[category] is None)

    def lookup(self) -> np.ndarray:
        """Category code (C=0 .. U=3) -> value, -1 for a dropped category."""
        return np.array([-1 if self._values[c] is None else self._values[c] for c in CATEGORIES], dtype=np.int64)


def parse_scheme(text: str | Scheme) -> Scheme:
    """Read ``C|U``, ``C+B|Q+U``, ... : groups in order split by ``|``, categories merged by ``+``.

    Whitespace is ignored and lower case accepted. Categories left out are
    missing values. Raises SchemeError naming what is wrong.
    """
    if isinstance(text, Scheme):
        return text
    if not isinstance(text, str):
        raise SchemeError(f"a scheme must be a string like 'C|B|Q|U', not {type(text).__name__}")
    compact = re.sub(r"\s+", "", text).upper()
    if not compact:
        raise SchemeError("the scheme is empty; write groups of C, B, Q, U separated by '|', e.g. 'C+B|Q+U'")
    groups: list[list[str]] = []
    seen: set[str] = set()
    for position, raw_group in enumerate(compact.split("|"), start=1):
        if not raw_group:
            raise SchemeError(f"scheme {text!r}: group {position} is empty")
        group: list[str] = []
        for category in raw_group.split("+"):
            if not category:
                raise SchemeError(f"scheme {text!r}: group {position} has an empty category around '+'")
            if category not in _CODE:
                hint = "; join categories with '+'" if len(category) > 1 and set(category) <= set(_CODE) else ""
                raise SchemeError(
                    f"scheme {text!r}: unknown category {category!r}; the categories are C, B, Q, U{hint}"
                )
            if category in seen:
                raise SchemeError(f"scheme {text!r}: category {category!r} is used twice")
            seen.add(category)
            group.append(category)
        groups.append(group)
    if len(groups) < 2:
        raise SchemeError(f"scheme {text!r}: needs at least two groups separated by '|' to measure agreement")
    return Scheme(*groups)


def check_level(level: str) -> str:
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; use one of {', '.join(LEVELS)}")
    return level


def check_aggregate(aggregate: str) -> str:
    if aggregate not in AGGREGATES:
        raise ValueError(f"unknown aggregate {aggregate!r}; use one of {', '.join(AGGREGATES)}")
    return aggregate
