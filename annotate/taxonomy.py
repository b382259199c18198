"""Label taxonomy and FaithBench's severity order. Pure: no Django imports.

Labels are stored as lists, as FaithBench stores them (``["Unwanted",
"Unwanted.Intrinsic"]``); a child ``A.B`` implies its parent ``A``. Each label
maps to a severity category: U(nwanted) > Q(uestionable) > B(enign) >
C(onsistent). A sample's label from one annotator is the worst category over
their spans ("worst pooling"); no span at all means C.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

CONSISTENT, BENIGN, QUESTIONABLE, UNWANTED = "C", "B", "Q", "U"
SEVERITY: dict[str, int] = {CONSISTENT: 0, BENIGN: 1, QUESTIONABLE: 2, UNWANTED: 3}
CATEGORY_NAMES: dict[str, str] = {
    CONSISTENT: "Consistent",
    BENIGN: "Benign",
    QUESTIONABLE: "Questionable",
    UNWANTED: "Unwanted",
}

# Spellings found in real FaithBench dumps, read as the label they meant.
ALIASES: dict[str, str] = {"Unwanted.Instrinsic": "Unwanted.Intrinsic"}

DEFAULT_TAXONOMY: dict[str, Any] = {
    "labels": [
        {
            "name": "Unwanted.Intrinsic",
            "category": UNWANTED,
            "hotkey": "1",
            "description": "Contradicts the source: a fact of the source is changed or misrepresented.",
            "example": "Source: eight weeks of repairs. Summary: nine weeks of repairs.",
        },
        {
            "name": "Unwanted.Extrinsic",
            "category": UNWANTED,
            "hotkey": "2",
            "description": "Adds information the source does not contain and that cannot be inferred from it.",
            "example": "Summary names a contractor the source never mentions.",
        },
        {
            "name": "Questionable",
            "category": QUESTIONABLE,
            "hotkey": "3",
            "description": "Reasonable people could disagree whether it is a hallucination.",
            "example": "A speed limit 'should ease congestion' when the source gives no reason.",
        },
        {
            "name": "Benign",
            "category": BENIGN,
            "hotkey": "4",
            "description": "Not in the source but true and harmless common knowledge or a fair inference.",
            "example": "Calls Paris 'the French capital' when the source only says Paris.",
        },
    ]
}


def default_taxonomy() -> dict[str, Any]:
    return copy.deepcopy(DEFAULT_TAXONOMY)


class LabelError(ValueError):
    """A label that the project's taxonomy does not know."""


def parent_of(label: str) -> str | None:
    return label.rsplit(".", 1)[0] if "." in label else None


def label_categories(taxonomy: Mapping[str, Any]) -> dict[str, str]:
    """Every label name the taxonomy accepts (children, their parents, aliases) -> category."""
    known: dict[str, str] = {}
    for entry in taxonomy.get("labels", []):
        name, category = entry["name"], entry["category"]
        known[name] = category
        parent = parent_of(name)
        while parent:
            known.setdefault(parent, category)
            parent = parent_of(parent)
    for alias, target in ALIASES.items():
        if target in known:
            known[alias] = known[target]
    return known


def validate_labels(labels: Any, taxonomy: Mapping[str, Any]) -> list[str]:
    """Check a label list as given; returns it unchanged (imports keep their spelling)."""
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        raise LabelError("labels must be a list of label names")
    known = label_categories(taxonomy)
    unknown = [label for label in labels if label not in known]
    if unknown:
        raise LabelError(f"unknown label {unknown[0]!r}; known labels: {', '.join(sorted(known))}")
    return labels


def normalize_labels(labels: Iterable[str], taxonomy: Mapping[str, Any]) -> list[str]:
    """Labels chosen in the app, stored FaithBench-style: parents first, then children, no repeats."""
    chosen = validate_labels(list(labels), taxonomy)
    result: list[str] = []
    for label in chosen:
        label = ALIASES.get(label, label)
        chain = [label]
        parent = parent_of(label)
        while parent:
            chain.insert(0, parent)
            parent = parent_of(parent)
        for name in chain:
            if name not in result:
                result.append(name)
    return result


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


def hotkey_labels(taxonomy: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(entry) for entry in taxonomy.get("labels", [])]
