"""Which pair format a file's first row looks like, to name the likely one when the chosen format refuses the file.

A raw file imported as pairs otherwise answers with one "unknown field 'id'"
a line and never says the format was the mistake. The guess is only a hint
beside the line errors: the import still reads the file in the format chosen.
"""

from __future__ import annotations

from typing import Any

# Each format as the import form and the API name it.
FORMAT_NAMES = {
    "raw": "raw (raw texts to perturb)",
    "pairs": "pairs (FaithLab's pair format)",
    "hades": "hades (HaDes release file)",
}


def likely_format(row: dict[str, Any]) -> tuple[str, str] | None:
    """The format ``row`` looks like and why, or None when it looks like none of them."""
    hades = [name for name in ("replaced", "replaced_ids") if name in row]
    if hades:
        return "hades", f"it has the field{'s' if len(hades) > 1 else ''} {' and '.join(hades)}"
    if set(row) == {"id", "text"}:
        return "raw", "its fields are exactly id and text"
    if "item_id" in row and "perturbed" in row:
        return "pairs", "it has the fields item_id and perturbed"
    return None
