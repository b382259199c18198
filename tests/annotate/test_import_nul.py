"""A NUL character (\\u0000) in an imported span file is refused on every database, naming the file, the sample or
line, and the field; nothing is written. PostgreSQL cannot store NUL (a 500 before the check), SQLite can: the rule
is the same on both."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import DataError

from annotate.models import Batch, Project
from annotate.services import ingest
from annotate.storable import find_unstorable
from tests.annotate.faithbench_refusals import (
    assert_command_refuses,
    assert_import_form_refuses,
    assert_postgresql_refuses,
    assert_samples_jsonl_refused,
    faithbench_file,
    rows,
)
from tests.annotate.test_ingest import example
from tests.conftest import login, needs_postgres
from tests.unstorable import NUL_PROBLEM


def set_note(document: dict[str, Any]) -> None:
    document["samples"][1]["annotations"][0]["note"] = "see\x00the source"


def set_source(document: dict[str, Any]) -> None:
    document["samples"][0]["source"] += "\x00"


def set_metadata_key(document: dict[str, Any]) -> None:
    document["samples"][1]["metadata"]["hhem\x002.1"] = 0.5


def set_nested_metadata(document: dict[str, Any]) -> None:
    document["samples"][0]["metadata"]["extra"] = {"tags": ["fine", "bad\x00tag"]}


def set_annotator_name(document: dict[str, Any]) -> None:
    document["samples"][0]["annotations"][1]["annotator_name"] = "An\x00a"


def set_sample_id(document: dict[str, Any]) -> None:
    document["samples"][1]["sample_id"] = "s\x001"


def set_roster(document: dict[str, Any]) -> None:
    document["roster"] = ["Ana", "B\x00o"]


CASES = [
    (set_note, "sample 1 (#1): field 'annotations[0].note': " + NUL_PROBLEM),
    (set_source, "sample 0 (#0): field 'source': " + NUL_PROBLEM),
    (set_metadata_key, "sample 1 (#1): field 'metadata.hhem\\u00002.1': its name " + NUL_PROBLEM),
    (set_nested_metadata, "sample 0 (#0): field 'metadata.extra.tags[1]': " + NUL_PROBLEM),
    (set_annotator_name, "sample 0 (#0): field 'annotations[1].annotator_name': " + NUL_PROBLEM),
    (set_sample_id, "sample 's\\x001' (#1): field 'sample_id': " + NUL_PROBLEM),
    (set_roster, "field 'roster[1]': " + NUL_PROBLEM),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "message"), CASES, ids=[change.__name__ for change, _ in CASES])
def test_the_command_refuses_nul_naming_file_sample_and_field(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    assert_command_refuses(tmp_path, change, message)


@pytest.mark.django_db
def test_the_import_form_refuses_nul_and_changes_nothing(project: Project, admin_user: Any) -> None:
    assert_import_form_refuses(admin_user, set_note, f"sample 1 (#1): field 'annotations[0].note': {NUL_PROBLEM}")


@needs_postgres
@pytest.mark.django_db
def test_on_postgresql_the_import_form_refuses_what_the_database_would_fail_on(
    project: Project, admin_user: Any
) -> None:
    assert_postgresql_refuses("\x00", DataError)
    test_the_import_form_refuses_nul_and_changes_nothing(project, admin_user)
    for change in (set_metadata_key, set_annotator_name):
        client = login(admin_user)
        client.raise_request_exception = True
        page = client.post("/projects/demo/import/", {"files": SimpleUploadedFile("b.json", faithbench_file(change))},
                           follow=True)
        assert page.status_code == 200 and NUL_PROBLEM in page.content.decode()
    assert not Batch.objects.exists()


@pytest.mark.django_db
def test_a_samples_jsonl_line_with_nul_is_named_with_the_other_bad_lines(project: Project) -> None:
    good = {"passage_id": "p1", "source": "The bridge reopened.", "summary": "It reopened.", "generator": "m"}
    lines = [good, {**good, "summary": "x", "metadata": {"notes": [{"by": "a\x00"}]}}, {**good, "generator": 5}]
    assert_samples_jsonl_refused(project, lines, [
        f"samples.jsonl: line 2: field 'metadata.notes[0].by': {NUL_PROBLEM}",
        "samples.jsonl: line 3: field 'generator' must be a string, found the number 5",
    ])


def test_find_unstorable_walks_values_keys_and_lists_in_file_order() -> None:
    assert find_unstorable({"a": "fine", "b": [1, None, {"c": "x"}]}) is None
    assert find_unstorable({"a": ["x\x00"], "b\x00": 1}).describe() == f"field 'a[0]': {NUL_PROBLEM}"
    key = find_unstorable({"a": {"k" * 80 + "\x00": 1}})
    assert key.in_key and key.describe() == f"field 'a.{'k' * 37}...': its name {NUL_PROBLEM}"
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(200):
        inner["n"] = [{}]
        inner = inner["n"][0]
    inner["v"] = "\x00"
    shown = find_unstorable(deep).describe()
    assert shown.startswith("field 'n[0].n[0]") and shown.endswith(f"n[0].v': {NUL_PROBLEM}") and len(shown) < 250


@pytest.mark.django_db
def test_a_raw_nul_byte_in_the_json_text_is_named_in_words(tmp_path: Path) -> None:
    # A NUL written as a raw byte inside a JSON string (not as the escape \u0000) stops the JSON decoder itself.
    # Before: "not valid JSON: Invalid control character at at line 1 column 50", no word of what the character was.
    text = json.dumps(example()).replace('"note": "', '"note": "a\x00', 1)
    path = tmp_path / "batch_1.json"
    path.write_bytes(text.encode())
    column = text.index("\x00") + 1
    before = rows()
    with pytest.raises(CommandError) as refused:
        call_command("import_faithbench", str(path), "--project", "fb")
    assert str(refused.value) == (
        f"nothing was imported: {path}: not valid JSON: Invalid control character "
        f"(U+0000, a NUL: the database cannot store it) at line 1 column {column}"
    )
    assert rows() == before
    with pytest.raises(ingest.ImportProblems) as refused_line:
        ingest.import_files(Project.objects.create(name="s", slug="s"), [("s.jsonl", b'{"summary": "a\t"}')])
    assert refused_line.value.messages == [
        "s.jsonl: line 1: not valid JSON: Invalid control character (U+0009) at column 15"
    ]
