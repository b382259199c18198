"""Labels of a taxonomy: the default one, which names a taxonomy accepts (children, their parents, aliases),
checking imported label lists and normalising the app's, and the labels the annotation page offers.
Pure: no Django imports."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from annotate.taxonomy.severity import BENIGN, QUESTIONABLE, UNWANTED

# Spellings found in real FaithBench dumps, read as the label they meant.
ALIASES: dict[str, str] = {"Unwanted.Instrinsic": "Unwanted.Intrinsic"}

DEFAULT_TAXONOMY: dict[str, Any] = {
    "labels": [
        {
            "name": "Unwanted.Intrinsic",
            "category": UNWANTED,
            "hotkey": "1",
            "color": "#c93c3c",
            "description": "Contradicts the source: a fact of the source is changed or misrepresented.",
            "example": "Source: eight weeks of repairs. Summary: nine weeks of repairs.",
        },
        {
            "name": "Unwanted.Extrinsic",
            "category": UNWANTED,
            "hotkey": "2",
            "color": "#8e3fb3",
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


def validate_labels(
    labels: Any, taxonomy: Mapping[str, Any], *, quote: Callable[[Any], str] = repr
) -> list[str]:
    """Check a label list as given; returns it unchanged (imports keep their spelling).

    ``quote`` writes the unknown label into the message: an importer passes its own, which cuts a long value
    as its other messages do.
    """
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        raise LabelError("labels must be a list of label names")
    known = label_categories(taxonomy)
    unknown = [label for label in labels if label not in known]
    if unknown:
        raise LabelError(f"unknown label {quote(unknown[0])}; known labels: {', '.join(sorted(known))}")
    return labels


def offered_taxonomy(taxonomy: Mapping[str, Any]) -> dict[str, Any]:
    """The taxonomy without its retired labels: what new spans from the app may use."""
    return {**taxonomy, "labels": [entry for entry in taxonomy.get("labels", []) if not entry.get("retired")]}


def normalize_labels(labels: Sequence[str], taxonomy: Mapping[str, Any]) -> list[str]:
    """Labels chosen in the app, stored FaithBench-style: parents first, then children, no repeats.

    Stricter than validate_labels, which imports use: a misspelling kept for
    old dumps and a retired label stay valid on existing spans, but the app
    writes neither.
    """
    if not isinstance(labels, list | tuple) or not all(isinstance(label, str) for label in labels):
        raise LabelError("labels must be a list of label names")
    chosen = list(labels)
    for label in chosen:
        if label in ALIASES:
            raise LabelError(
                f"{label!r} is a misspelling accepted only from imported files; use {ALIASES[label]!r}"
            )
    offered = label_categories(offered_taxonomy(taxonomy))
    for label in chosen:
        if label not in offered and label in label_categories(taxonomy):
            raise LabelError(f"label {label!r} is retired: existing spans keep it, new labels cannot use it")
    # The list names only what this function accepts: no import-only alias, no retired label.
    accepted = sorted(label for label in offered if label not in ALIASES)
    unknown = [label for label in chosen if label not in accepted]
    if unknown:
        raise LabelError(f"unknown label {unknown[0]!r}; labels you can use: {', '.join(accepted)}")
    result: list[str] = []
    for label in chosen:
        chain = [label]
        parent = parent_of(label)
        while parent:
            chain.insert(0, parent)
            parent = parent_of(parent)
        for name in chain:
            if name not in result:
                result.append(name)
    return result


def hotkey_labels(taxonomy: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The labels the annotation page offers, in order: retired ones left out, ``color`` always present (None when unset)."""
    return [{**entry, "color": entry.get("color") or None} for entry in offered_taxonomy(taxonomy)["labels"]]
