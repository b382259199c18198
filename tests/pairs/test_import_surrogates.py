"""A lone surrogate (JSON's ``"\\ud800"``: half of a UTF-16 pair, not a character) anywhere in a pair file (raw
texts, FaithLab's pair format, HaDes rows) is refused on every database with the file, the line and the field named,
among the file's other problems; nothing is written. Before, a value holding one was a 500 on both databases (SQLite
cannot encode it for a text column, PostgreSQL refuses it), and a HaDes row's extra key was stored where no export
could write it back."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotate.models import Project
from tests.conftest import login, needs_postgres
from tests.pairs.factories_formats import hades_rows, pair_line, refused, snapshot
from tests.unstorable import surrogate_problem as problem


def ascii_jsonl(*rows: Any) -> bytes:
    """JSONL as json.dumps writes it by default: a lone surrogate as its escape, the way one reaches a real file."""
    return "".join(json.dumps(row) + "\n" for row in rows).encode("ascii")


@pytest.mark.django_db
def test_raw_texts_with_a_lone_surrogate_are_refused_line_by_line(pairs_project: Project) -> None:
    content = ascii_jsonl({"id": "a", "text": "A fine text 🌉."}, {"id": "b", "text": "A text cut \ud83c"},
                          {"id": "c\udfff", "text": "Another."}, {"id": "d"})
    assert refused(pairs_project, content, "raw") == [
        "in.jsonl: line 2: field 'text': " + problem("\\ud83c"),
        "in.jsonl: line 3: field 'id': " + problem("\\udfff"),
        "in.jsonl: line 4: missing field 'text'",
    ]


@pytest.mark.django_db
def test_a_pair_lines_nested_metadata_value_or_key_with_a_lone_surrogate_is_named(pairs_project: Project) -> None:
    content = ascii_jsonl(
        pair_line(item_id="i1", metadata={"source": {"notes": ["ok", "n\udc00"]}}),
        pair_line(item_id="i2", metadata={"k\ud800": 1}),
        pair_line(item_id="i3"),
    )
    assert refused(pairs_project, content, "pairs") == [
        "in.jsonl: line 1: field 'metadata.source.notes[1]': " + problem("\\udc00"),
        "in.jsonl: line 2: field 'metadata.k\\ud800': its name " + problem(),
    ]


@pytest.mark.django_db
def test_a_hades_row_with_a_lone_surrogate_in_its_text_or_an_extra_key_is_refused(pairs_project: Project) -> None:
    rows = hades_rows()
    rows[0]["replaced"] = rows[0]["replaced"].replace(" . it was", " \udbff . it was", 1)
    rows[1]["annotator\ud800"] = "kept as it came"
    assert refused(pairs_project, ascii_jsonl(*rows), "hades", "h.jsonl") == [
        "h.jsonl: line 1: field 'replaced': " + problem("\\udbff"),
        "h.jsonl: line 2: field 'annotator\\ud800': its name " + problem(),
    ]


@pytest.mark.django_db
def test_the_import_page_shows_the_refusal_instead_of_failing(pairs_project: Project, admin_user: Any) -> None:
    rows = hades_rows()
    rows[1]["replaced"] += " \ud800"
    client = login(admin_user)
    client.raise_request_exception = True  # the encoding error was a 500 page on both databases
    before = snapshot()
    upload = SimpleUploadedFile("h.jsonl", ascii_jsonl(*rows), content_type="application/jsonl")
    page = client.post("/projects/pairs/pairs/import/", {"format": "hades", "files": [upload]}, follow=True)
    assert page.status_code == 200
    html = page.content.decode().replace("&#x27;", "'")
    assert "h.jsonl: line 2: field 'replaced': " + problem() in html
    assert snapshot() == before


@needs_postgres
@pytest.mark.django_db
def test_on_postgresql_each_pair_format_refuses_it_before_the_database_would(
    pairs_project: Project, admin_user: Any
) -> None:
    test_raw_texts_with_a_lone_surrogate_are_refused_line_by_line(pairs_project)
    test_a_pair_lines_nested_metadata_value_or_key_with_a_lone_surrogate_is_named(pairs_project)
    test_a_hades_row_with_a_lone_surrogate_in_its_text_or_an_extra_key_is_refused(pairs_project)
    test_the_import_page_shows_the_refusal_instead_of_failing(pairs_project, admin_user)
