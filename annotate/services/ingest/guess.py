"""Which span format a file looks like, when the format it is read in refuses it (as the pairs importer's guess does).

A FaithBench batch file read as samples JSONL was one "not valid JSON" error a
line, and a samples JSONL file named .json (the page tells the format by the
name) was "Extra data at line 2": neither said that the format was the mistake.
"""

from __future__ import annotations

import json
import re

# A FaithBench batch file as FaithBench and FaithLab write it: its list of samples first, indented or on one line.
FAITHBENCH_START = re.compile(r'\s*\{\s*"samples"\s*:')
SAMPLE_LINE_FIELDS = ("passage_id", "source", "summary", "generator")
FAITHBENCH_ADVICE = ("this looks like a FaithBench batch file (one JSON object with a list of samples under 'samples'), "
                     "not samples JSONL (a JSON object a line): import it as format faithbench (on the project page, a "
                     ".json file)")


def _first_line(text: str) -> str:
    return next((line for line in text.split("\n") if line.strip()), "")


def looks_like_faithbench(text: str) -> str | None:
    """The advice for a file read as samples JSONL that is one JSON document instead (a FaithBench batch file, or
    a list of samples spread over lines), or None."""
    if FAITHBENCH_START.match(text):
        return FAITHBENCH_ADVICE
    if _first_line(text).strip() not in ("{", "["):  # a line of samples JSONL is a whole object, not its first brace
        return None
    try:
        document = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    if isinstance(document, dict) and isinstance(document.get("samples"), list):
        return FAITHBENCH_ADVICE
    if not isinstance(document, list):
        return None
    return (f"this is one JSON list of {len(document)} item{'' if len(document) == 1 else 's'} spread over several "
            "lines, not samples JSONL: write each sample as a JSON object on a line of its own (jq -c '.[]' does)")


def looks_like_samples_jsonl(text: str) -> str | None:
    """The advice for a file read as FaithBench whose first line is a samples JSONL line on its own, or None."""
    try:
        row = json.loads(_first_line(text))
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(row, dict) or "samples" in row or not any(name in row for name in SAMPLE_LINE_FIELDS):
        return None
    return ("it looks like samples JSONL (a JSON object a line, with passage_id, source and summary): import it as "
            "format jsonl (on the project page, name the file .jsonl)")
