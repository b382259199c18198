"""A lone surrogate (U+D800..U+DFFF, which JSON writes as ``"\\ud800"``: half of a UTF-16 pair, not a character) is
refused wherever span-project text comes in, as NUL is: a FaithBench file or a JSONL source file names the file, the
sample or line and the field; a JSON body to the API gets a 400 naming the field; nothing is written.

Before: on SQLite a FaithBench metadata key holding one was stored, then the JSONL export stopped early, the zip
download broke and the sample's API and the results page answered 500; in a value (a summary, a note, a name) the
import itself was a 500, and so was an API body whose refusal quoted it (an unknown key, a choice). On PostgreSQL
every one was a 500. A real character outside the BMP, written as its two escapes, is one character and is kept.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import DataError

from annotate.models import Project, Sample, SpanAnnotation
from annotate.storable import find_unstorable
from tests.annotate.faithbench_refusals import (
    assert_command_refuses,
    assert_import_form_refuses,
    assert_postgresql_refuses,
    assert_samples_jsonl_refused,
    faithbench_file,
)
from tests.conftest import login, needs_postgres
from tests.unstorable import surrogate_problem as problem


def set_metadata_key(document: dict[str, Any]) -> None:
    document["samples"][1]["metadata"] = {"summarizer": "m", "k\ud800": 1}


def set_summary(document: dict[str, Any]) -> None:
    document["samples"][0]["summary"] += " \udfff"  # the last surrogate of the range; the spans' offsets hold


def set_note(document: dict[str, Any]) -> None:
    document["samples"][1]["annotations"][0]["note"] = "cut \ud83d"


def set_annotator_name(document: dict[str, Any]) -> None:
    document["samples"][0]["annotations"][1]["annotator_name"] = "An\udc80a"


CASES = [
    (set_metadata_key, "sample 1 (#1): field 'metadata.k\\ud800': its name " + problem()),
    (set_summary, "sample 0 (#0): field 'summary': " + problem("\\udfff")),
    (set_note, "sample 1 (#1): field 'annotations[0].note': " + problem("\\ud83d")),
    (set_annotator_name, "sample 0 (#0): field 'annotations[1].annotator_name': " + problem("\\udc80")),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "message"), CASES, ids=[change.__name__ for change, _ in CASES])
def test_the_command_refuses_a_lone_surrogate_naming_file_sample_and_field(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    assert_command_refuses(tmp_path, change, message)


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "message"), CASES, ids=[change.__name__ for change, _ in CASES])
def test_the_import_form_refuses_a_lone_surrogate_and_changes_nothing(
    project: Project, admin_user: Any, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    assert_import_form_refuses(admin_user, change, message)


@pytest.mark.django_db
def test_a_samples_jsonl_line_with_a_lone_surrogate_is_named_with_the_other_bad_lines(project: Project) -> None:
    good = {"passage_id": "p1", "source": "The bridge reopened.", "summary": "It reopened.", "generator": "m"}
    lines = [good, {**good, "summary": "It re\udbffopened."}, {**good, "metadata": {"tags": {"\udc00": 1}}},
             {**good, "generator": 5}]
    assert_samples_jsonl_refused(project, lines, [
        "samples.jsonl: line 2: field 'summary': " + problem("\\udbff"),
        "samples.jsonl: line 3: field 'metadata.tags.\\udc00': its name " + problem("\\udc00"),
        "samples.jsonl: line 4: field 'generator' must be a string, found the number 5",
    ])


@pytest.mark.django_db
def test_a_character_outside_the_bmp_written_as_two_escapes_is_kept_and_read_back_everywhere(
    project: Project, admin_user: Any
) -> None:
    """The check must not refuse a real surrogate pair: 🌉 is "\\ud83c\\udf09" in an ASCII-only file."""

    def add_bridges(document: dict[str, Any]) -> None:
        document["samples"][1]["metadata"] = {"summarizer": "m", "k🌉": 1}
        document["samples"][1]["annotations"][0]["note"] = "see 🌉"

    content = faithbench_file(add_bridges)
    assert b"\\ud83c\\udf09" in content
    client = login(admin_user)
    client.raise_request_exception = True
    client.post("/projects/demo/import/", {"files": SimpleUploadedFile("batch_1.json", content)})
    sample = Sample.objects.get(project=project, external_id="1")
    assert sample.metadata == {"summarizer": "m", "k🌉": 1}
    assert SpanAnnotation.objects.filter(sample=sample, note="see 🌉").exists()
    exported = b"".join(client.get("/api/projects/demo/export/?format=jsonl").streaming_content).decode()
    assert len(exported.splitlines()) == Sample.objects.filter(project=project).count()
    archive = zipfile.ZipFile(io.BytesIO(b"".join(client.get("/api/projects/demo/export/?format=faithbench")
                                                   .streaming_content)))
    written = json.loads(archive.read("demo-round1/batch_1.json"))
    assert written["samples"][1]["metadata"]["k🌉"] == 1
    assert client.get(f"/api/samples/{sample.pk}/").status_code == 200
    assert client.get("/projects/demo/results/").status_code == 200


# --------------------------------------------------------------------------- JSON bodies to the API


def spans_body(sample: Sample, **changes: Any) -> dict[str, Any]:
    return {"sample": sample.pk, "start": 0, "end": 7, "labels": ["Benign"], **changes}


@pytest.mark.django_db
def test_a_json_body_with_a_lone_surrogate_is_a_400_naming_the_field(sample: Sample, alice: Any) -> None:
    client = login(alice)
    client.raise_request_exception = True  # the unknown key and the choice were 500s: their refusal quoted it
    sent = [
        (spans_body(sample, note="cut \ud83d"), {"note": [problem("\\ud83d")]}),
        (spans_body(sample, labels=["Benign", "Unw\udc00"]), {"labels": ["labels[1]: " + problem("\\udc00")]}),
        ({**spans_body(sample), "k\ud800": 1}, {"k\\ud800": [f"its name {problem()}"]}),
        ([spans_body(sample, note="\ud800")], {"non_field_errors": [f"body[0].note: {problem()}"]}),
    ]
    for body, errors in sent:
        answer = client.post("/api/spans/", json.dumps(body), content_type="application/json")
        assert (answer.status_code, answer.json()) == (400, errors)
    flagged = client.post(f"/api/samples/{sample.pk}/flag/", json.dumps({"kind": "broken\udbff"}),
                          content_type="application/json")
    assert (flagged.status_code, flagged.json()) == (400, {"kind": [problem("\\udbff")]})
    assert not SpanAnnotation.objects.exists()


@pytest.mark.django_db
def test_a_span_change_with_a_lone_surrogate_changes_nothing(sample: Sample, alice: Any) -> None:
    client = login(alice)
    client.raise_request_exception = True
    created = client.post("/api/spans/", json.dumps(spans_body(sample, note="fine")), content_type="application/json")
    assert created.status_code == 201
    span = created.json()
    answer = client.patch(f"/api/spans/{span['id']}/", json.dumps({"version": span["version"], "note": "x\ud800"}),
                          content_type="application/json")
    assert (answer.status_code, answer.json()) == (400, {"note": [problem()]})
    stored = SpanAnnotation.objects.get(pk=span["id"])
    assert (stored.note, stored.version) == ("fine", span["version"])


def test_find_unstorable_names_a_lone_surrogate_in_a_value_or_a_key_but_not_a_pair() -> None:
    assert find_unstorable({"k🌉": ["see 🌉", "\U0010ffff"]}) is None
    found = find_unstorable({"a": [{"b": "ok"}, {"c": "x\udfff"}]})
    assert found is not None and found.describe() == "field 'a[1].c': " + problem("\\udfff")
    key = find_unstorable({"a": {"k\ud800": "\x00"}})
    assert key is not None and key.in_key and key.describe() == f"field 'a.k\\ud800': its name {problem()}"


# --------------------------------------------------------------------------- PostgreSQL


@needs_postgres
@pytest.mark.django_db
def test_on_postgresql_a_lone_surrogate_is_refused_before_the_database_fails_on_it(
    project: Project, admin_user: Any, alice: Any, sample: Sample
) -> None:
    # psycopg cannot encode a lone surrogate for a text column; the server refuses its JSON escape in a jsonb key.
    assert_postgresql_refuses("\ud800", (DataError, UnicodeEncodeError))
    for change, message in CASES:
        test_the_import_form_refuses_a_lone_surrogate_and_changes_nothing(project, admin_user, change, message)
    test_a_samples_jsonl_line_with_a_lone_surrogate_is_named_with_the_other_bad_lines(project)
    test_a_json_body_with_a_lone_surrogate_is_a_400_naming_the_field(sample, alice)
