"""import_judgements --flag with several runs: each run keeps its own count, the total counts each sample once."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from annotate.models import Batch
from judging.models import AuditItem
from judging.services.ingest import import_judgements
from tests.conftest import login

pytestmark = pytest.mark.django_db

# Two judges in one file: "fast" flags samples 0 and 2 (p < 0.5), "strict" flags 0 and 1 (score <= 3).
TWO_JUDGES = [
    {"sample": "0", "judge": "fast", "p": 0.2},
    {"sample": "1", "judge": "fast", "p": 0.9},
    {"sample": "2", "judge": "fast", "p": 0.3},
    {"sample": "0", "judge": "strict", "score": 2},
    {"sample": "1", "judge": "strict", "score": 3},
    {"sample": "2", "judge": "strict", "score": 5},
]


def jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "\n".join(json.dumps(row) for row in rows).encode("utf-8")


def queued(batch: Batch) -> set[str]:
    return set(AuditItem.objects.filter(project=batch.project).values_list("sample__external_id", flat=True))


def queue_sample_two_earlier(batch: Batch) -> None:
    earlier = import_judgements(batch.project, [("earlier.jsonl", jsonl([{"sample": "2", "judge": "old", "p": 0.1}]))],
                                flag=True)
    assert (earlier.flagged, earlier.flagged_new) == (1, 1)
    assert queued(batch) == {"2"}


def test_two_runs_flagging_one_sample_count_it_once_in_the_total(batch: Batch) -> None:
    report = import_judgements(batch.project, [("two.jsonl", jsonl(TWO_JUDGES))], flag=True)

    assert queued(batch) == {"0", "1", "2"}
    per_run = {imported.run.judge.name: imported.flagged for imported in report.runs}
    assert per_run == {"fast": 2, "strict": 2}  # each run's own flags, sample 0 in both
    assert report.flagged == AuditItem.objects.filter(project=batch.project).count() == 3
    assert report.flagged_new == 3
    answer = report.as_dict()
    assert (answer["flagged"], answer["flagged_new"]) == (3, 3)
    assert [run["flagged"] for run in answer["runs"]] == [2, 2]


def test_samples_already_in_the_queue_are_counted_apart_from_new_ones(batch: Batch) -> None:
    queue_sample_two_earlier(batch)

    report = import_judgements(batch.project, [("two.jsonl", jsonl(TWO_JUDGES))], flag=True)

    assert queued(batch) == {"0", "1", "2"}
    assert (report.flagged, report.flagged_new) == (3, 2)
    fast, strict = report.runs
    assert report.describe().splitlines() == [
        f"imported 6 judgements into {batch.project.slug!r}:",
        f"  fast (run {fast.run.pk}, new judge): 3 scored, 0 failed, 2 flagged",
        f"  strict (run {strict.run.pk}, new judge): 3 scored, 0 failed, 2 flagged",
        "in all: 3 distinct samples flagged, in the audit queue (2 newly added, 1 already there)",
    ]


def test_without_flag_the_report_says_nothing_of_the_queue(batch: Batch) -> None:
    report = import_judgements(batch.project, [("two.jsonl", jsonl(TWO_JUDGES))])
    assert (report.flagged, report.flagged_new) == (None, None)
    assert "in all" not in report.describe()
    assert not AuditItem.objects.exists()


def test_the_command_prints_the_distinct_total(batch: Batch, tmp_path: Any) -> None:
    path = tmp_path / "two.jsonl"
    path.write_bytes(jsonl(TWO_JUDGES))
    output = StringIO()
    call_command("import_judgements", str(path), "--project", batch.project.slug, "--flag", "--json", stdout=output)
    answer = json.loads(output.getvalue())
    assert (answer["flagged"], answer["flagged_new"]) == (3, 3)
    assert sorted(run["flagged"] for run in answer["runs"]) == [2, 2]


def test_the_api_answers_the_distinct_total(batch: Batch, admin_user: Any) -> None:
    queue_sample_two_earlier(batch)
    upload = SimpleUploadedFile("two.jsonl", jsonl(TWO_JUDGES), "application/jsonl")
    answer = login(admin_user).post(f"/api/projects/{batch.project.slug}/judgements/import/",
                                    {"file": upload, "flag": "true"})
    assert answer.status_code == 201
    body = answer.json()
    assert (body["flagged"], body["flagged_new"]) == (3, 2)
    assert [run["flagged"] for run in body["runs"]] == [2, 2]
