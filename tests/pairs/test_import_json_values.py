"""Pair, HaDes and raw-text files read their lines with the one reader every import shares (annotate.imported_json):
NaN, the infinities, a key given twice and too deep a nesting are refused naming the file, the line and the field
(the review's pp-nan.jsonl was a 500 from the database); a file that is not UTF-8 text says what it is (UTF-16, a
zip archive) instead of "invalid continuation byte"; an offset given as null is said to be null, not missing."""

from __future__ import annotations

import gzip
import io
import zipfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Project
from tests.pairs.factories_formats import hades_rows, jsonl, pair_line, refused, snapshot

pytestmark = pytest.mark.django_db

NOT_JSON = "which JSON does not allow and no database stores; write a number or null"
TWICE = "is given twice in one object; give each field once (a reader would silently keep only the last value)"


def test_nan_in_a_pair_line_and_a_key_twice_in_a_hades_row_are_named(pairs_project: Project) -> None:
    pairs = jsonl(pair_line(item_id="i1"), pair_line(item_id="i2")).decode().splitlines()
    pairs[1] = pairs[1].replace('"item_id": "i2"', '"item_id": "i2", "metadata": {"x": NaN, "y": Infinity}')
    assert refused(pairs_project, "\n".join(pairs).encode(), "pairs") == [
        f"in.jsonl: line 2: field 'metadata.x' is NaN, {NOT_JSON}",
    ]
    hades = jsonl(*hades_rows()).decode().splitlines()
    hades[0] = hades[0].replace('"hallucination": ', '"hallucination": 1, "hallucination": ', 1)
    assert refused(pairs_project, "\n".join(hades).encode(), "hades", "h.jsonl") == [
        f"h.jsonl: line 1: field 'hallucination' {TWICE}",
    ]
    assert refused(pairs_project, b'{"id": "a", "text": "A text.", "n": 1e999}\n', "raw") == [
        "in.jsonl: line 1: field 'n' is 1e999, too large a number to store (the largest is about 1.8e308); write a "
        "smaller number or null",
    ]


def test_deep_nesting_in_a_line_is_named_not_a_recursion_error(pairs_project: Project) -> None:
    deep = b'{"item_id": "i1", "metadata": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    assert refused(pairs_project, deep, "pairs") == [
        "in.jsonl: line 1: lists and objects are nested too deeply to read (the limit is 100 levels)",
    ]


def test_an_offset_given_as_null_is_said_to_be_null(pairs_project: Project) -> None:
    assert refused(pairs_project, jsonl(pair_line(perturbed_start=None), pair_line(item_id="i2", original_end=...)),
                   "pairs") == [
        "in.jsonl: line 1: field 'perturbed_start' is null; it must be a whole number (a code-point offset)",
        "in.jsonl: line 2: missing field 'original_end'",
    ]


def test_files_that_are_not_utf8_text_say_what_they_are(pairs_project: Project) -> None:
    line = jsonl(pair_line())
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("p.jsonl", line)
    cases = {
        line.decode().encode("utf-16"): "this is UTF-16 text, not UTF-8: save it as UTF-8 JSONL (an editor's Save "
                                        "as, encoding UTF-8)",
        archive.getvalue(): "this is a zip archive, not a text file: unzip it and import the files it holds",
        gzip.compress(line): "this is a gzip-compressed file, not a text file: decompress it (gunzip) and import the "
                             "file it holds",
        line.decode().replace("opened", "öpened").encode("latin-1"): "not UTF-8 text (invalid start byte at byte 42); "
                                                                     "save it as UTF-8 JSONL",
    }
    for content, message in cases.items():
        assert refused(pairs_project, content, "pairs") == [f"in.jsonl: {message}"]


def test_the_command_gives_the_same_message(tmp_path: Path, pairs_project: Project) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(jsonl(pair_line()).decode().encode("utf-16"))
    before = snapshot()
    with pytest.raises(CommandError, match="p.jsonl: this is UTF-16 text, not UTF-8: save it as UTF-8 JSONL"):
        call_command("import_pairs", str(path), "--project", "pairs", "--format", "pairs")
    assert snapshot() == before
