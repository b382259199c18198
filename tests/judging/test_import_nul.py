"""A NUL character (\\u0000) in an imported judgement line or synthetic rewrite is refused on every database with
the file, the line and the field named; nothing is written."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotate.models import Batch, Project
from judging.models import Judgement, SyntheticItem, SyntheticRewrite, SyntheticSet
from judging.services.synthetic import import_rewrites
from judging.services.synthetic.sets import SyntheticSetError
from tests.conftest import login
from tests.judging.synthetic_scene import FIVE, add_outputs, rewrite_of
from tests.judging.test_ingest import failure

NUL_PROBLEM = "contains a NUL character (\\u0000), which the database cannot store"


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
    add_outputs(project)
    external_id, summary = FIVE[0]
    first = summary.split(". ")[0] + "."
    records = [{"sample": external_id, "sentence": 0, "type": "intrinsic", "rewritten": rewrite_of("intrinsic", first)},
               {"sample": external_id, "sentence": 1, "type": "intrinsic", "rewritten": "A made\x00 up sentence."}]
    content = "\n".join(json.dumps(record) for record in records).encode()
    with pytest.raises(SyntheticSetError) as refused:
        import_rewrites(project, "nul", content, "rewrites.jsonl")
    assert refused.value.problems == [f"rewrites.jsonl, line 2, field 'rewritten': {NUL_PROBLEM}"]
    assert not SyntheticSet.objects.exists() and not SyntheticItem.objects.exists()
    assert not SyntheticRewrite.objects.exists()


@pytest.mark.django_db
def test_the_import_api_answers_400_naming_the_line_and_field(batch: Batch, admin_user: Any) -> None:
    content = b'{"sample": "0", "judge": "llm", "score": 4, "raw": "{\\"score\\": 4}\\u0000"}\n'
    client = login(admin_user)
    client.raise_request_exception = True
    answer = client.post("/api/projects/demo/judgements/import/", {"file": SimpleUploadedFile("j.jsonl", content)})
    assert answer.status_code == 400
    assert answer.json() == {"file": [f"j.jsonl: line 1: field 'raw': {NUL_PROBLEM}"]}
    assert not Judgement.objects.exists()
