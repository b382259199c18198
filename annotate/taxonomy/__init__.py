"""Label taxonomy and FaithBench's severity order. Pure: no Django imports.

Labels are stored as lists, as FaithBench stores them (``["Unwanted",
"Unwanted.Intrinsic"]``); a child ``A.B`` implies its parent ``A``. Each label
maps to a severity category: U(nwanted) > Q(uestionable) > B(enign) >
C(onsistent). A sample's label from one annotator is the worst category over
their spans ("worst pooling"); no span at all means C.

Split by topic, each module importing only those before it: ``severity`` (the categories and worst pooling),
``labels`` (the default taxonomy, the names a taxonomy accepts, checking and normalising label lists) and
``editing`` (checking an edited label set). Callers import from ``annotate.taxonomy``; the first migration's
``annotate.taxonomy.default_taxonomy`` is the one in ``labels``.
"""

from __future__ import annotations

from annotate.taxonomy.editing import (
    LABEL_CATEGORIES,
    MAX_NAME,
    MAX_TEXT,
    RESERVED_HOTKEYS,
    LabelProblem,
    LabelSetError,
    check_label_set,
    is_hex_color,
)
from annotate.taxonomy.labels import (
    ALIASES,
    DEFAULT_TAXONOMY,
    LabelError,
    default_taxonomy,
    hotkey_labels,
    label_categories,
    normalize_labels,
    offered_taxonomy,
    parent_of,
    validate_labels,
)
from annotate.taxonomy.severity import (
    BENIGN,
    CATEGORY_NAMES,
    CONSISTENT,
    QUESTIONABLE,
    SEVERITY,
    UNWANTED,
    category_of,
    worst_category,
)

__all__ = [
    "ALIASES",
    "BENIGN",
    "CATEGORY_NAMES",
    "CONSISTENT",
    "DEFAULT_TAXONOMY",
    "LABEL_CATEGORIES",
    "MAX_NAME",
    "MAX_TEXT",
    "QUESTIONABLE",
    "RESERVED_HOTKEYS",
    "SEVERITY",
    "UNWANTED",
    "LabelError",
    "LabelProblem",
    "LabelSetError",
    "category_of",
    "check_label_set",
    "default_taxonomy",
    "hotkey_labels",
    "is_hex_color",
    "label_categories",
    "normalize_labels",
    "offered_taxonomy",
    "parent_of",
    "validate_labels",
    "worst_category",
]
