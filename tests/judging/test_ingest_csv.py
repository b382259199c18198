"""A CSV file given to the judgement import (an export's CSV, say) is refused with one message saying only JSONL
imports, instead of one "not valid JSON" error per row; nothing is written. JSONL files are not mistaken for CSV."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotate.models import Batch
from judging.models import Judge, Judgement, JudgeRun
from judging.services.export import export_lines
from judging.services.ingest import JudgementImportFailed, import_judgements
from tests.conftest import login

ONLY_JSONL = "only JSONL imports: one JSON object a line, as the JSONL export writes. Nothing was imported."


def counts() -> tuple[int, int, int]:
    return Judge.objects.count(), JudgeRun.objects.count(), Judgement.objects.count()


def refused(batch: Batch, *files: tuple[str, bytes]) -> list[str]:
    before = counts()
    with pytest.raises(JudgementImportFailed) as caught:
        import_judgements(batch.project, list(files))
    assert counts() == before
    return caught.value.messages


def exported_csv(batch: Batch, rows: int) -> bytes:
    """A real CSV export of ``rows`` judgements, as a researcher would download it and try to import it back."""
    # Three samples: a run of their own for every three lines, as a judge run many times exports.
    lines = "\n".join(json.dumps({"sample": str(i % 3), "judge": "elsewhere", "run": i // 3, "score": 1 + i % 5})
                      for i in range(rows))
    import_judgements(batch.project, [("made.jsonl", lines.encode())])
    text = "".join(export_lines(batch.project, what="judgements", format="csv"))
    Judgement.objects.all().delete()
    JudgeRun.objects.all().delete()
    Judge.objects.all().delete()
    return text.encode()


@pytest.mark.django_db
def test_an_exported_csv_gets_one_message_not_one_per_row(batch: Batch) -> None:
    content = exported_csv(batch, 150)
    messages = refused(batch, ("judgements.csv", content))
    assert len(messages) == 1
    assert messages[0].startswith("judgements.csv: this is a CSV file (its first line is 'sample,batch,judge,kind,")
    assert messages[0].endswith(ONLY_JSONL)
    assert "not valid JSON" not in messages[0]


@pytest.mark.django_db
def test_a_csv_under_another_name_is_told_by_its_header(batch: Batch) -> None:
    messages = refused(batch, ("judgements.txt", b"sample,judge,score\n0,gpt,4\n1,gpt,5\n"))
    assert messages == [f"judgements.txt: this is a CSV file (its first line is 'sample,judge,score'); {ONLY_JSONL}"]


@pytest.mark.django_db
def test_a_csv_name_with_a_one_column_header_is_refused_too(batch: Batch) -> None:
    messages = refused(batch, ("scores.CSV", b"\xef\xbb\xbfscore\n4\n5\n"))
    assert messages == [f"scores.CSV: this is a CSV file (its first line is 'score'); {ONLY_JSONL}"]


@pytest.mark.django_db
def test_the_other_files_problems_are_still_listed_beside_it(batch: Batch) -> None:
    messages = refused(batch, ("a.csv", b"sample,judge,score\n0,gpt,4\n"),
                       ("b.jsonl", b'{"sample": "0", "judge": "gpt", "score": 9}\n'))
    assert len(messages) == 2
    assert messages[0].startswith("a.csv: this is a CSV file")
    assert messages[1] == "b.jsonl: line 1: field 'score' must be an integer from 1 to 5, got 9"


@pytest.mark.django_db
def test_jsonl_is_never_taken_for_csv(batch: Batch) -> None:
    """JSONL named .csv still imports; a broken JSON line with commas keeps its own line message."""
    report = import_judgements(batch.project, [("named-wrong.csv", b'{"sample": "0", "judge": "gpt", "score": 4}\n')])
    assert report.judgements == 1
    messages = refused(batch, ("broken.jsonl", b'{"sample": "0", "judge": "gpt", "score": 4\n'))
    assert len(messages) == 1 and messages[0].startswith("broken.jsonl: line 1: not valid JSON")
    listed = refused(batch, ("list.jsonl", b'["sample", "judge", "score"]\n'))
    assert listed == ["list.jsonl: line 1: expected a JSON object, found a list of 3 items"]


@pytest.mark.django_db
def test_the_api_answers_the_one_message_under_file(batch: Batch, admin_user: Any) -> None:
    upload = SimpleUploadedFile("judgements.csv", exported_csv(batch, 120), "text/csv")
    answer = login(admin_user).post("/api/projects/demo/judgements/import/", {"file": [upload]})
    assert answer.status_code == 400
    errors = answer.json()
    assert list(errors) == ["file"] and len(errors["file"]) == 1
    assert errors["file"][0].endswith(ONLY_JSONL)
    assert counts() == (0, 0, 0)
