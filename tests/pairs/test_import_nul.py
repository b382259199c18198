"""A NUL character (\\u0000) anywhere in a pair file (raw texts, FaithLab's pair format, HaDes rows) is refused on
every database with the file, the line and the field named, among the file's other problems; nothing is written."""

from __future__ import annotations

import pytest

from annotate.models import Project
from tests.pairs.factories_formats import hades_rows, jsonl, pair_line, refused
from tests.unstorable import NUL_PROBLEM


@pytest.mark.django_db
def test_raw_texts_with_nul_are_refused_line_by_line(pairs_project: Project) -> None:
    content = jsonl({"id": "a", "text": "A fine text."}, {"id": "b", "text": "A text\x00 with NUL."}, {"id": "c"})
    assert refused(pairs_project, content, "raw") == [
        f"in.jsonl: line 2: field 'text': {NUL_PROBLEM}",
        "in.jsonl: line 3: missing field 'text'",
    ]


@pytest.mark.django_db
def test_a_pair_lines_nested_metadata_value_or_key_with_nul_is_named(pairs_project: Project) -> None:
    content = jsonl(
        pair_line(item_id="i1", metadata={"source": {"notes": ["ok", "n\x00"]}}),
        pair_line(item_id="i2", metadata={"k\x00": 1}),
        pair_line(item_id="i3"),
    )
    assert refused(pairs_project, content, "pairs") == [
        f"in.jsonl: line 1: field 'metadata.source.notes[1]': {NUL_PROBLEM}",
        f"in.jsonl: line 2: field 'metadata.k\\u0000': its name {NUL_PROBLEM}",
    ]


@pytest.mark.django_db
def test_a_hades_row_with_nul_in_an_extra_key_is_refused(pairs_project: Project) -> None:
    rows = hades_rows()
    rows[1]["annotator_comment"] = "kept as it came\x00"
    assert refused(pairs_project, jsonl(*rows), "hades", "h.jsonl") == [
        f"h.jsonl: line 2: field 'annotator_comment': {NUL_PROBLEM}",
    ]
