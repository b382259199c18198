"""A NUL character (\\u0000) in an imported judgement line or synthetic rewrite is refused on every database with
the file, the line and the field named; nothing is written."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Batch, Project
from tests.judging.import_refusals import assert_judgements_api_refuses, assert_rewrite_refused
from tests.judging.test_ingest import failure
from tests.unstorable import NUL_PROBLEM


@pytest.mark.django_db
def test_a_judgement_line_with_nul_in_its_reasoning_is_named_with_the_other_bad_lines(batch: Batch) -> None:
    refused = failure(
        batch.project,
        {"sample": "0", "judge": "llm", "score": 4, "reasoning": "fine"},
        {"sample": "1", "judge": "llm", "score": 2, "reasoning": "the source says\x00 otherwise"},
        {"sample": "2", "judge": "llm\x00", "score": 3},
        {"sample": "2", "judge": "llm", "score": 9},
    )
    assert refused.messages == [
        f"judged.jsonl: line 2: field 'reasoning': {NUL_PROBLEM}",
        f"judged.jsonl: line 3: field 'judge': {NUL_PROBLEM}",
        "judged.jsonl: line 4: field 'score' must be an integer from 1 to 5, got 9",
    ]


@pytest.mark.django_db
def test_a_synthetic_rewrite_with_nul_is_named_by_file_line_and_field(project: Project) -> None:
    assert_rewrite_refused(project, "nul", "A made\x00 up sentence.", NUL_PROBLEM)


@pytest.mark.django_db
def test_the_import_api_answers_400_naming_the_line_and_field(batch: Batch, admin_user: Any) -> None:
    content = b'{"sample": "0", "judge": "llm", "score": 4, "raw": "{\\"score\\": 4}\\u0000"}\n'
    assert_judgements_api_refuses(admin_user, content, f"j.jsonl: line 1: field 'raw': {NUL_PROBLEM}")
