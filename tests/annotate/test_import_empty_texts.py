"""A sample with an empty summary or source, or one of white space alone, is nothing to annotate: refused in
FaithBench files and samples JSONL, naming the file, the sample or line and the field (the review's
fb-empty-texts.json, sj-empty-summary.jsonl and sj-ws-summary.jsonl were imported). A FaithBench file with no
samples made an empty batch and an embedding job; it is refused as an empty samples file is. The API's answer to an
empty file names the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Project
from annotate.services import ingest
from tests.annotate.campaign_helpers import page_text
from tests.annotate.faithbench_refusals import rows
from tests.annotate.test_ingest import example
from tests.conftest import login

pytestmark = pytest.mark.django_db

NEEDS = "a sample needs its text"


def test_faithbench_samples_with_empty_or_blank_texts_are_refused_each_named(project: Project) -> None:
    document = example()
    document["samples"][0]["source"] = " \n\t"
    document["samples"][1]["summary"] = ""
    before = rows()
    with pytest.raises(ingest.ImportProblems) as refused:
        ingest.import_files(project, [("batch_1.json", json.dumps(document).encode())])
    assert refused.value.messages == [
        f"batch_1.json: sample 0 (#0): field 'source' is only white space; {NEEDS}",
        f"batch_1.json: sample 1 (#1): field 'summary' is empty; {NEEDS}",
    ]
    assert rows() == before


def test_samples_jsonl_lines_with_empty_or_blank_texts_are_refused(project: Project, admin_user: Any) -> None:
    from tests.annotate.test_api_imports import api_import

    lines = [{"passage_id": "p1", "source": "One. Two.", "summary": "", "generator": "g"},
             {"passage_id": "p2", "source": "Three.", "summary": "\u3000 ", "generator": "g"},
             {"passage_id": "p3", "source": "", "summary": "Four.", "generator": "g"}]
    before = rows()
    answer = api_import(login(admin_user), [("s.jsonl", "\n".join(json.dumps(line) for line in lines).encode())],
                        format="jsonl")
    assert (answer.status_code, answer.json()) == (400, {"file": [
        f"s.jsonl: line 1: field 'summary' is empty; {NEEDS}",
        f"s.jsonl: line 2: field 'summary' is only white space; {NEEDS}",
        f"s.jsonl: line 3: field 'source' is empty; {NEEDS}",
    ]})
    assert rows() == before


def test_a_faithbench_file_without_samples_is_refused_everywhere(
    project: Project, admin_user: Any, tmp_path: Path
) -> None:
    from tests.annotate.test_api_imports import api_import, page_import

    empty = b'{"samples": []}'
    message = "b.json: no samples: the list under 'samples' is empty"
    before = rows()
    client = login(admin_user)
    assert api_import(client, [("b.json", empty)], format="faithbench").json() == {"file": [message]}
    assert f"Nothing was imported. {message}" in page_text(page_import(client, [("b.json", empty)]))
    path = tmp_path / "b.json"
    path.write_bytes(empty)
    with pytest.raises(CommandError, match="no samples: the list under 'samples' is empty"):
        call_command("import_faithbench", str(path), "--project", "demo")
    assert rows() == before


def test_an_empty_or_blank_file_is_named(project: Project, admin_user: Any, tmp_path: Path) -> None:
    from tests.annotate.test_api_imports import api_import

    answer = api_import(login(admin_user), [("batch_1.json", b"")], format="faithbench")
    assert (answer.status_code, answer.json()) == (
        400, {"file": ["batch_1.json: the file is empty (0 bytes); nothing was imported"]})
    with pytest.raises(ingest.ImportFailed) as blank:
        ingest.import_files(project, [("b.json", b"  \n\n")])
    assert str(blank.value) == ("b.json: the file is empty (or holds only white space); a FaithBench batch file is an "
                                "object with a list under 'samples'")
