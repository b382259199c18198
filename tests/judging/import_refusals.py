"""Checks shared by the judging import tests of text the database cannot store (test_import_nul.py,
test_import_surrogates.py): a NUL and a lone surrogate take the same ways in (the judgements API, a synthetic
rewrites file) and must be refused the same way, naming the file, the line and the field, with nothing written."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotate.models import Project
from judging.models import Judge, Judgement, SyntheticItem, SyntheticRewrite, SyntheticSet
from judging.services.synthetic import import_rewrites
from judging.services.synthetic.sets import SyntheticSetError
from tests.conftest import login
from tests.judging.synthetic_scene import FIVE, add_outputs, rewrite_of


def assert_judgements_api_refuses(admin_user: Any, content: bytes, message: str) -> None:
    """POST /api/projects/demo/judgements/import/ of ``content`` as j.jsonl answers 400 with ``message`` for the
    file, and writes no judge and no judgement."""
    client = login(admin_user)
    client.raise_request_exception = True  # an encoding or database error fails the test, not a 500
    answer = client.post("/api/projects/demo/judgements/import/", {"file": SimpleUploadedFile("j.jsonl", content)})
    assert (answer.status_code, answer.json()) == (400, {"file": [message]})
    assert not Judgement.objects.exists() and not Judge.objects.exists()


def assert_rewrite_refused(project: Project, set_name: str, rewritten: str, problem: str) -> None:
    """A rewrites file whose second record rewrites sentence 1 as ``rewritten`` is refused with ``problem`` for its
    line 2 (the first record is a good one), and no set, item or rewrite is written."""
    add_outputs(project)
    external_id, summary = FIVE[0]
    first = summary.split(". ")[0] + "."
    records = [{"sample": external_id, "sentence": 0, "type": "intrinsic", "rewritten": rewrite_of("intrinsic", first)},
               {"sample": external_id, "sentence": 1, "type": "intrinsic", "rewritten": rewritten}]
    content = "\n".join(json.dumps(record) for record in records).encode("ascii")
    with pytest.raises(SyntheticSetError) as refused:
        import_rewrites(project, set_name, content, "rewrites.jsonl")
    assert refused.value.problems == [f"rewrites.jsonl, line 2, field 'rewritten': {problem}"]
    assert not SyntheticSet.objects.exists() and not SyntheticItem.objects.exists()
    assert not SyntheticRewrite.objects.exists()
