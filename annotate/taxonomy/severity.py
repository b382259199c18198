"""FaithBench's severity categories, U(nwanted) > Q(uestionable) > B(enign) > C(onsistent), and worst pooling: the
category of one span's labels, and the worst over a sample's spans. Pure: no Django imports."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

CONSISTENT, BENIGN, QUESTIONABLE, UNWANTED = "C", "B", "Q", "U"
SEVERITY: dict[str, int] = {CONSISTENT: 0, BENIGN: 1, QUESTIONABLE: 2, UNWANTED: 3}
CATEGORY_NAMES: dict[str, str] = {
    CONSISTENT: "Consistent",
    BENIGN: "Benign",
    QUESTIONABLE: "Questionable",
    UNWANTED: "Unwanted",
}


def category_of(labels: Iterable[str], categories: Mapping[str, str]) -> str | None:
    """Worst category of one span's labels; None for an empty list (such spans are ignored).

    Any label beginning with ``Unwanted`` counts as Unwanted, whatever the taxonomy says.
    """
    worst: str | None = None
    for label in labels:
        category = UNWANTED if label.startswith("Unwanted") else categories.get(label)
        if category is None:
            continue
        if worst is None or SEVERITY[category] > SEVERITY[worst]:
            worst = category
    return worst


def worst_category(categories: Iterable[str | None]) -> str:
    """Worst pooling: the most severe category, Consistent when there is none."""
    worst = CONSISTENT
    for category in categories:
        if category is not None and SEVERITY[category] > SEVERITY[worst]:
            worst = category
    return worst
