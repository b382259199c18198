"""Batch names as file names (annotate.file_names): what an import refuses, and the safe, unique names an export
writes in their place (tests/annotate/test_batch_file_names.py: the imports and exports that use them)."""

from __future__ import annotations

import pytest

from annotate import file_names


@pytest.mark.parametrize(("name", "problem"), [
    ("", "is empty"), ("  ", "is empty"), ("a\tb", "holds the invisible control character U+0009"),
    ("\u202eexe", "holds the invisible control character U+202E"), ("x ", "ends with a dot or a space"),
    ("lpt1.txt", "is a device name on Windows (LPT1)"), ("😀" * 63, "takes 257 bytes as a file name"),
])
def test_file_name_problem_names_what_is_unsafe(name: str, problem: str) -> None:
    assert (file_names.file_name_problem(name) or "").startswith(problem)
    safe = file_names.safe_file_name(name)
    assert file_names.file_name_problem(safe) is None, safe


@pytest.mark.parametrize("name", ["batch_1", "Größe über ünïcødé 😀 batch", "=inj batch", "a.b", "👩‍👩‍👧 family"])
def test_ordinary_names_are_safe_and_kept(name: str) -> None:
    assert file_names.file_name_problem(name) is None
    assert file_names.export_file_names([name]) == [f"{name}.json"]


def test_long_names_stay_unique_and_within_the_limit() -> None:
    names = file_names.export_file_names(["😀" * 100, "😀" * 100 + "x", "😀" * 100 + "y"])
    assert len(set(names)) == 3
    assert all(len(name.encode()) <= file_names.MAX_FILE_NAME_BYTES for name in names)
