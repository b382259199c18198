"""A FaithBench batch file reports every problem at once, as a samples JSONL file does: each bad field of a sample
and each bad annotation, in file order, capped as the JSONL reader caps them; one problem reads as before."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotate.services import ingest
from annotate.services.ingest.checks import MAX_MESSAGES
from annotate.taxonomy import default_taxonomy
from tests.annotate.faithbench_refusals import rows
from tests.annotate.test_ingest import example
from tests.conftest import login


def problems_of(document: Any, file: str = "b.json") -> list[str]:
    with pytest.raises(ingest.ImportProblems) as refused:
        ingest.parse_faithbench(json.dumps(document).encode(), file, default_taxonomy())
    return refused.value.messages


def test_two_errors_in_two_samples_are_both_named() -> None:
    document = example()
    document["samples"][0]["annotations"][1]["summary_end"] = 999
    document["samples"][1]["annotations"][0]["label"] = ["Made.Up"]
    messages = problems_of(document)
    assert len(messages) == 2
    assert messages[0].startswith("b.json: sample 0 (#0): annotation #1 (annot_id 2): summary_start/summary_end 152..999 "
                                  "out of range")
    assert messages[1].startswith("b.json: sample 1 (#1): annotation #0 (annot_id 4): field 'label': ")


def test_every_bad_field_of_one_sample_is_named() -> None:
    document = {"samples": [{"sample_id": [1], "summary": 3, "metadata": {"summarizer": 5}}]}
    assert problems_of(document) == [
        "b.json: sample [1] (#0): missing field 'source'",
        "b.json: sample [1] (#0): field 'sample_id' must be a number or a string",
        "b.json: sample [1] (#0): field 'summary' must be a string, found the number 3",
        "b.json: sample [1] (#0): field 'metadata.summarizer' must be a string",
    ]


def test_a_repeated_sample_id_and_a_bad_roster_are_named_beside_the_samples_problems() -> None:
    document = example()
    document["samples"].append({**document["samples"][0], "annotations": []})
    document["samples"][0]["summary"] = None
    document["roster"] = "Ana"
    assert problems_of(document) == [
        "b.json: sample 0 (#0): field 'summary' must be a string, found null",
        "b.json: sample 0 (#2): field 'sample_id' repeats an earlier sample",
        "b.json: field 'roster' must be a list of annotator names",
    ]


def test_problems_past_the_cap_are_counted() -> None:
    document = {"samples": [{"sample_id": n} for n in range(MAX_MESSAGES + 3)]}  # each lacks source and summary
    with pytest.raises(ingest.ImportProblems) as refused:
        ingest.parse_faithbench(json.dumps(document).encode(), "b.json", default_taxonomy())
    assert refused.value.total == 2 * (MAX_MESSAGES + 3) and len(refused.value.messages) == MAX_MESSAGES
    assert str(refused.value).endswith(f"... and {MAX_MESSAGES + 6} more")


def test_one_problem_reads_as_before() -> None:
    document = example()
    document["samples"][1]["annotations"][0]["label"] = ["Made.Up"]
    with pytest.raises(ingest.ImportFailed) as refused:
        ingest.parse_faithbench(json.dumps(document).encode(), "b.json", default_taxonomy())
    assert str(refused.value).startswith("b.json: sample 1 (#1): annotation #0 (annot_id 4): field 'label': ")
    assert "errors" not in str(refused.value)


@pytest.mark.django_db
def test_the_project_page_lists_both_errors_and_imports_nothing(project: Any, admin_user: Any) -> None:
    document = example()
    document["samples"][0]["annotations"][1]["summary_end"] = 999
    document["samples"][1]["annotations"][0]["label"] = ["Made.Up"]
    before = rows()
    page = login(admin_user).post("/projects/demo/import/", {"files": [
        SimpleUploadedFile("w5.json", json.dumps(document).encode())]}, follow=True)
    html = page.content.decode().replace("&#x27;", "'")
    assert "Nothing was imported: 2 errors." in html
    assert "w5.json: sample 0 (#0): annotation #1 (annot_id 2)" in html
    assert "w5.json: sample 1 (#1): annotation #0 (annot_id 4)" in html
    assert rows() == before
