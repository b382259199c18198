"""What JSON allows Python's json to read but no import may keep, in FaithBench and samples JSONL files: NaN,
Infinity, -Infinity and numbers past a double (1e999 reads as infinity), which no database stores in a JSON column
(the review: SQLite's CHECK JSON_VALID, PostgreSQL's 'Token "NaN" is invalid', a 500 on the page and the API, a
traceback from the command); a key given twice in one object (json keeps the last value, silently); and lists and
objects nested too deeply (100,000 levels were a RecursionError). Each is refused naming the file, the sample or
line and the field, and nothing is written. One reader does this for every importer (annotate.imported_json); the
pair, HaDes, raw-text, judgement and synthetic readers are tested in tests/pairs and tests/judging."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import DataError, IntegrityError, transaction

from annotate.models import Project
from annotate.services import ingest
from tests.annotate.campaign_helpers import page_text
from tests.annotate.faithbench_refusals import rows
from tests.annotate.test_ingest import example
from tests.conftest import login, needs_postgres

pytestmark = pytest.mark.django_db

NOT_JSON = "which JSON does not allow and no database stores; write a number or null"
TWICE = "is given twice in one object; give each field once (a reader would silently keep only the last value)"
# The example file with a detector value spelt as Python's json writes NaN and the infinities.
HHEM = '"hhem-2.1": 0.21'


def example_text(old: str, new: str) -> str:
    """The example file as json.dumps indents it, ``old`` (which it must hold) replaced by ``new`` once."""
    text = json.dumps(example(), indent=1)
    assert old in text
    return text.replace(old, new, 1)


def with_value(written: str) -> str:
    return example_text(HHEM, f'"hhem-2.1": {written}')


@pytest.mark.parametrize(("written", "problem"), [
    ("NaN", f"is NaN, {NOT_JSON}"),
    ("Infinity", f"is Infinity, {NOT_JSON}"),
    ("-Infinity", f"is -Infinity, {NOT_JSON}"),
    ("1e999", "is 1e999, too large a number to store (the largest is about 1.8e308); write a smaller number or null"),
])
def test_the_command_refuses_a_number_no_database_stores(tmp_path: Path, written: str, problem: str) -> None:
    path = tmp_path / "batch_1.json"
    path.write_text(with_value(written))
    assert written in path.read_text()
    before = rows()
    with pytest.raises(CommandError) as refused:
        call_command("import_faithbench", str(path), "--project", "fb")
    assert str(refused.value) == f"nothing was imported: {path}: sample 0 (#0): field 'metadata.hhem-2.1' {problem}"
    assert rows() == before


def test_the_page_and_the_api_refuse_nan_instead_of_a_500(project: Project, admin_user: Any) -> None:
    from tests.annotate.test_api_imports import api_import, page_import

    client = login(admin_user)
    client.raise_request_exception = True  # a database error fails the test, not a 500 page
    before = rows()
    message = f"batch_1.json: sample 0 (#0): field 'metadata.hhem-2.1' is NaN, {NOT_JSON}"
    answer = api_import(client, [("batch_1.json", with_value("NaN").encode())], format="faithbench")
    assert (answer.status_code, answer.json()) == (400, {"file": [message]})
    page = page_import(client, [("batch_1.json", with_value("NaN").encode())])
    assert page.status_code == 200 and f"Nothing was imported. {message}" in page_text(page)
    assert rows() == before


def test_without_the_check_the_database_refuses_nan_so_the_import_was_a_500() -> None:
    """The premise, on either database: SQLite's CHECK (JSON_VALID(...)) or PostgreSQL's jsonb refuses NaN."""
    with pytest.raises((IntegrityError, DataError)), transaction.atomic():
        Project.objects.create(name="nan", slug="nan", taxonomy={"x": math.nan})


@needs_postgres
def test_on_postgresql_nan_in_a_samples_jsonl_line_is_refused_by_the_page(project: Project, admin_user: Any) -> None:
    from tests.annotate.test_api_imports import page_import

    line = '{"passage_id": "p1", "source": "One. Two.", "summary": "One.", "generator": "g", "metadata": {"p": NaN}}'
    client = login(admin_user)
    client.raise_request_exception = True
    page = page_import(client, [("s.jsonl", line.encode())])
    assert f"s.jsonl: line 1: field 'metadata.p' is NaN, {NOT_JSON}" in page_text(page)
    assert rows()["Sample"] == 0


def test_samples_jsonl_names_each_line_with_nan_or_a_repeated_key(project: Project) -> None:
    good = '{"passage_id": "p1", "source": "One. Two.", "summary": "One.", "generator": "g"}'
    lines = [
        good,
        '{"passage_id": "p1", "source": "One. Two.", "summary": "Two.", "generator": "g", "metadata": {"p": NaN}}',
        '{"passage_id": "p1", "source": "One. Two.", "summary": "One!", "summary": "Two!", "generator": "g"}',
        '{"passage_id": "p1", "source": "One. Two.", "summary": "x", "generator": "g", "metadata": {"p": -Infinity}}',
    ]
    before = rows()
    with pytest.raises(ingest.ImportProblems) as refused:
        ingest.import_files(project, [("s.jsonl", "\n".join(lines).encode())])
    assert refused.value.messages == [
        f"s.jsonl: line 2: field 'metadata.p' is NaN, {NOT_JSON}",
        f"s.jsonl: line 3: field 'summary' {TWICE}",
        f"s.jsonl: line 4: field 'metadata.p' is -Infinity, {NOT_JSON}",
    ]
    assert rows() == before


def test_a_key_given_twice_is_refused_wherever_it_is(project: Project) -> None:
    """The review's fb-dup-keys.json: the sample's summary given twice, the last one silently kept; a key twice in
    an annotation, in metadata, and at the top of the file."""
    cases = [
        ('"sample_id": 0,', '"sample_id": 0, "summary": "X",', f"sample 0 (#0): field 'summary' {TWICE}"),
        ('"annot_id": 1,', '"annot_id": 1, "note": "a",', f"sample 0 (#0): field 'annotations[0].note' {TWICE}"),
        (HHEM, f'{HHEM}, "hhem-2.1": 0.3', f"sample 0 (#0): field 'metadata.hhem-2.1' {TWICE}"),
        ('{\n "samples"', '{\n "roster": [], "roster": ["Ana"], "samples"', f"field 'roster' {TWICE}"),
    ]
    for old, new, message in cases:
        with pytest.raises(ingest.ImportProblems) as refused:
            ingest.import_files(project, [("batch_1.json", example_text(old, new).encode())])
        assert refused.value.messages == [f"batch_1.json: {message}"]
    assert rows()["Sample"] == 0


def test_deep_nesting_is_a_clear_error_not_a_recursion_error(tmp_path: Path, project: Project) -> None:
    """The review's fb-deep.json (100,000 "[") was an uncaught RecursionError; 500 levels read but are refused too."""
    deepest = tmp_path / "deep.json"
    deepest.write_text('{"samples": [{"sample_id": 0, "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}]}")
    with pytest.raises(CommandError) as refused:
        call_command("import_faithbench", str(deepest), "--project", "fb")
    assert str(refused.value) == (f"nothing was imported: {deepest}: lists and objects are nested too deeply to read "
                                  f"(the limit is 100 levels)")
    document = example()
    document["samples"][0]["metadata"]["x"] = json.loads("[" * 500 + "]" * 500)
    with pytest.raises(ingest.ImportProblems) as deep:
        ingest.import_files(project, [("deep.json", json.dumps(document).encode())])
    [message] = deep.value.messages
    assert message.startswith("deep.json: sample 0 (#0): field 'metadata.x[0][0]")
    assert message.endswith("' nests lists and objects more than 100 levels deep; no import "
                            "takes that many")
    assert rows()["Sample"] == 0
