"""The refusal wording for text the database cannot store (a NUL, a lone surrogate), as every importer and the API
say it (annotate/storable.py). The span, pair and judging import tests all compare against it, so it is written
once here: a change of wording is then one edit, not six."""

from __future__ import annotations

NUL_PROBLEM = "contains a NUL character (\\u0000), which the database cannot store"


def surrogate_problem(escape: str = "\\ud800") -> str:
    """The refusal of a lone surrogate, named by its JSON escape (``\\ud800`` unless told)."""
    return (f"contains a lone surrogate ({escape}): half of a UTF-16 pair (an emoji cut in two, say), which is not a "
            "character and cannot be stored as text")
