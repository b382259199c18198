"""A samples JSONL import reports every problem at once (file, line, field), on the page and from the
service, and writes nothing; the lines themselves are split as an editor numbers them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotate.models import Batch, Passage, Project, Sample
from annotate.services import ingest
from annotate.services.ingest.checks import MAX_MESSAGES
from tests.conftest import login

GOOD = {"passage_id": "p1", "source": "One.", "summary": "A.", "generator": "g"}


def jsonl(*rows: Any) -> str:
    # Non-ASCII written as it is, as most JSONL writers do (ensure_ascii=False), not as \u escapes.
    return "\n".join(row if isinstance(row, str) else json.dumps(row, ensure_ascii=False) for row in rows)


def problems_of(content: str | bytes, file: str = "up.jsonl") -> list[str]:
    with pytest.raises(ingest.ImportProblems) as failure:
        ingest.parse_samples_jsonl(content, file)
    return failure.value.messages


def test_three_bad_lines_are_three_messages_in_line_order() -> None:
    content = jsonl(GOOD, "not json", {**GOOD, "generator": 3}, GOOD, {"passage_id": "p2", "source": "Two."})
    assert problems_of(content) == [
        "up.jsonl: line 2: not valid JSON: Expecting value at column 1",
        "up.jsonl: line 3: field 'generator' must be a string, found the number 3",
        "up.jsonl: line 5: missing field 'summary'",
        "up.jsonl: line 5: missing field 'generator'",
    ]


def test_every_bad_field_of_one_line_is_named() -> None:
    line = {"passage_id": True, "source": 1, "summary": "A.", "generator": "g" * 301, "metadata": [1], "batch": " "}
    assert problems_of(jsonl(line)) == [
        "up.jsonl: line 1: field 'passage_id' must be a non-empty string or number",
        "up.jsonl: line 1: field 'source' must be a string, found the number 1",
        "up.jsonl: line 1: field 'generator' has 301 characters; the limit is 300",
        "up.jsonl: line 1: field 'metadata' must be an object, found a list of 1 item",
        "up.jsonl: line 1: field 'batch' must be a non-empty string",
    ]


def test_a_second_source_for_a_passage_is_reported_beside_the_other_lines_problems() -> None:
    content = jsonl(GOOD, {**GOOD, "source": "Other."}, [1])
    assert problems_of(content) == [
        "up.jsonl: line 2: field 'source' differs from an earlier line with passage_id 'p1'",
        "up.jsonl: line 3: expected a JSON object, found a list of 1 item",
    ]


def test_every_passage_with_too_many_summaries_is_named() -> None:
    rows = [{**GOOD, "passage_id": key, "summary": f"S{n}."} for key in ("a", "b") for n in range(11)]
    assert problems_of(jsonl(*rows)) == [
        "up.jsonl: passage 'a' has more than 10 summaries; give those lines a 'batch'",
        "up.jsonl: passage 'b' has more than 10 summaries; give those lines a 'batch'",
    ]


def test_one_problem_reads_as_before() -> None:
    with pytest.raises(ingest.ImportFailed) as failure:
        ingest.parse_samples_jsonl(jsonl(GOOD, "{"), "up.jsonl")
    assert str(failure.value).startswith("up.jsonl: line 2: not valid JSON")
    assert "errors" not in str(failure.value)


def test_a_line_separator_inside_a_summary_stays_in_its_line() -> None:
    # str.splitlines splits at U+2028 and U+0085, which JSON writers leave unescaped inside strings.
    content = jsonl({**GOOD, "summary": "A\u2028B\u0085C."}, {**GOOD, "summary": "D."})
    batches = ingest.parse_samples_jsonl(content, "up.jsonl")
    assert [s.summary for b in batches for s in b.samples] == ["A\u2028B\u0085C.", "D."]


def test_a_byte_order_mark_is_not_part_of_the_first_line() -> None:
    content = "\ufeff" + jsonl(GOOD, {**GOOD, "summary": "B."}) + "\r\n"
    for given in (content, content.encode("utf-8")):
        batches = ingest.parse_samples_jsonl(given, "up.jsonl")
        assert [s.summary for b in batches for s in b.samples] == ["A.", "B."]


def test_lines_past_the_cap_are_counted() -> None:
    content = jsonl(*["nope"] * (MAX_MESSAGES + 5))
    with pytest.raises(ingest.ImportProblems) as failure:
        ingest.parse_samples_jsonl(content, "up.jsonl")
    assert failure.value.total == MAX_MESSAGES + 5 and len(failure.value.messages) == MAX_MESSAGES
    assert str(failure.value).endswith("... and 5 more")


@pytest.mark.django_db
def test_the_project_page_lists_every_problem_of_every_file_and_imports_nothing(
    project: Project, admin_user: Any
) -> None:
    bad = jsonl(GOOD, "oops", {**GOOD, "summary": 1}, {"source": "x"}).encode()
    also_bad = jsonl({**GOOD, "generator": None}).encode()
    good = jsonl({**GOOD, "passage_id": "p9"}).encode()
    files = [SimpleUploadedFile("bad.jsonl", bad), SimpleUploadedFile("good.jsonl", good),
             SimpleUploadedFile("also.jsonl", also_bad)]
    page = login(admin_user).post("/projects/demo/import/", {"files": files}, follow=True)
    html = page.content.decode().replace("&#x27;", "'")
    expected = [
        "Nothing was imported: 6 errors.",
        "bad.jsonl: line 2: not valid JSON",
        "bad.jsonl: line 3: field 'summary' must be a string, found the number 1",
        "bad.jsonl: line 4: missing field 'passage_id'",
        "bad.jsonl: line 4: missing field 'summary'",
        "bad.jsonl: line 4: missing field 'generator'",
        "also.jsonl: line 1: field 'generator' must be a string, found null",
    ]
    positions = [html.find(text) for text in expected]
    assert -1 not in positions and positions == sorted(positions), dict(zip(expected, positions, strict=True))
    assert not Batch.objects.exists() and not Sample.objects.exists() and not Passage.objects.exists()


@pytest.mark.django_db
def test_a_single_problem_on_the_page_reads_as_one_message(project: Project, admin_user: Any) -> None:
    upload = SimpleUploadedFile("one.jsonl", jsonl(GOOD, "oops").encode())
    html = login(admin_user).post("/projects/demo/import/", {"files": [upload]}, follow=True).content.decode()
    assert "Nothing was imported. one.jsonl: line 2: not valid JSON" in html and "errors." not in html
    assert not Batch.objects.exists()
