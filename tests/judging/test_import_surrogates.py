"""A lone surrogate (JSON's ``"\\ud800"``: half of a UTF-16 pair, not a character) in an imported judgement line or
synthetic rewrite is refused on every database with the file, the line and the field named; nothing is written.
Before, POST /api/projects/<slug>/judgements/import/ with one in a line's reasoning was a 500 on SQLite and on
PostgreSQL alike."""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotate.models import Batch, Project
from tests.conftest import needs_postgres
from tests.judging.import_refusals import assert_judgements_api_refuses, assert_rewrite_refused
from tests.judging.test_ingest import failure
from tests.unstorable import surrogate_problem as problem


@pytest.mark.django_db
def test_judgement_lines_with_a_lone_surrogate_are_named_with_the_other_bad_lines(batch: Batch) -> None:
    refused = failure(
        batch.project,
        {"sample": "0", "judge": "llm", "score": 4, "reasoning": "fine 🌉"},
        {"sample": "1", "judge": "llm", "score": 2, "reasoning": "the source says \ud83c"},
        {"sample": "2", "judge": "llm\udfff", "score": 3},
        {"sample": "2", "judge": "llm", "score": 3, "raw": "{\"score\": 3}", "\udc00": 1},
        {"sample": "2", "judge": "llm", "score": 9},
    )
    assert refused.messages == [
        "judged.jsonl: line 2: field 'reasoning': " + problem("\\ud83c"),
        "judged.jsonl: line 3: field 'judge': " + problem("\\udfff"),
        "judged.jsonl: line 4: field '\\udc00': its name " + problem("\\udc00"),
        "judged.jsonl: line 5: field 'score' must be an integer from 1 to 5, got 9",
    ]


@pytest.mark.django_db
def test_the_import_api_answers_400_naming_the_line_and_field(batch: Batch, admin_user: Any) -> None:
    content = json.dumps({"sample": "0", "judge": "llm", "score": 4, "reasoning": "nine weeks \ud800"}).encode("ascii")
    assert_judgements_api_refuses(admin_user, content, "j.jsonl: line 1: field 'reasoning': " + problem())


@pytest.mark.django_db
def test_a_synthetic_rewrite_with_a_lone_surrogate_is_named_by_file_line_and_field(project: Project) -> None:
    assert_rewrite_refused(project, "surrogate", "A made up \udbff sentence.", problem("\\udbff"))


@needs_postgres
@pytest.mark.django_db
def test_on_postgresql_the_judgement_and_rewrite_imports_refuse_it_too(batch: Batch, admin_user: Any) -> None:
    test_judgement_lines_with_a_lone_surrogate_are_named_with_the_other_bad_lines(batch)
    test_the_import_api_answers_400_naming_the_line_and_field(batch, admin_user)
    test_a_synthetic_rewrite_with_a_lone_surrogate_is_named_by_file_line_and_field(batch.project)
