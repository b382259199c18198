"""Exporting a round the project does not have is refused everywhere (API, command, page), with nothing
written; the rounds it does have still export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Assignment, Batch, Job, Project
from annotate.services import export, spans
from tests.conftest import login

pytestmark = pytest.mark.django_db


def jsonl(response: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "faithbench"])
def test_the_api_answers_400_for_a_round_the_project_lacks(batch: Batch, admin_user: Any, fmt: str) -> None:
    response = login(admin_user).get(f"/api/projects/demo/export/?format={fmt}&round=7")
    assert response.status_code == 400
    assert response.json() == {"round": ["project 'demo' has no round 7 (its rounds: 1)"]}


def test_the_api_names_every_round_the_project_has(batch: Batch, admin_user: Any, alice: Any) -> None:
    Assignment.objects.create(batch=batch, annotator=alice, round=3)
    response = login(admin_user).get("/api/projects/demo/export/?format=jsonl&round=2")
    assert response.status_code == 400
    assert response.json()["round"] == ["project 'demo' has no round 2 (its rounds: 1, 3)"]
    assert login(admin_user).get("/api/projects/demo/export/?format=jsonl&round=3").status_code == 200


def test_the_command_refuses_an_unknown_round_and_writes_nothing(tmp_path: Path, batch: Batch) -> None:
    for fmt, out in (("jsonl", tmp_path / "r7.jsonl"), ("csv", tmp_path / "r7.csv"), ("faithbench", tmp_path / "r7")):
        with pytest.raises(CommandError, match=r"^round: project 'demo' has no round 7 \(its rounds: 1\)$"):
            call_command("export", "--project", "demo", "--format", fmt, "--out", str(out), "--round", "7")
        assert not out.exists()


def test_the_page_export_refuses_an_unknown_round_and_queues_nothing(batch: Batch, admin_user: Any) -> None:
    page = login(admin_user).post("/projects/demo/exports/", {"format": "jsonl", "round": "7"}, follow=True)
    assert "Export not started: round: project &#x27;demo&#x27; has no round 7 (its rounds: 1)" in page.content.decode()
    assert not Job.objects.filter(kind=Job.Kind.EXPORT).exists()


def test_the_check_comes_before_the_first_line_is_asked_for(batch: Batch) -> None:
    # A streamed response starts at the first line: a lazy check would already have answered 200.
    for lines in (export.jsonl_lines, export.csv_lines):
        with pytest.raises(export.ExportError) as refused:
            lines(batch.project, export.ExportOptions(format="jsonl", round=7))
        assert refused.value.field == "round"


def test_a_round_holding_only_an_unassigned_annotators_spans_still_exports(
    tmp_path: Path, sample: Any, alice: Any
) -> None:
    # Unassigning keeps the work ("exports list it"): the round has spans but no assignment.
    assignment = Assignment.objects.create(batch=sample.batch, annotator=alice, round=2)
    spans.create_span(sample, alice, round=2, start=0, end=7, labels=["Benign"])
    assignment.delete()
    assert export.export_rounds(sample.project) == [1, 2]
    out = tmp_path / "r2.jsonl"
    call_command("export", "--project", "demo", "--format", "jsonl", "--out", str(out), "--round", "2")
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [a["summary_span"] for line in lines for a in line["annotations"]] == [sample.summary[:7]]


def test_round_one_of_a_project_nobody_is_assigned_to_yet_exports_its_samples(
    batch: Batch, admin_user: Any
) -> None:
    Assignment.objects.all().delete()
    response = login(admin_user).get("/api/projects/demo/export/?format=jsonl")
    assert response.status_code == 200
    assert len(jsonl(response)) == batch.samples.count()
    refused = login(admin_user).get("/api/projects/demo/export/?format=jsonl&round=2")
    assert refused.json() == {"round": ["project 'demo' has no round 2 (its rounds: 1)"]}


def test_another_projects_rounds_do_not_count(batch: Batch, alice: Any) -> None:
    other = Project.objects.create(name="Other", slug="other")
    other_batch = Batch.objects.create(project=other, name="o-1")
    Assignment.objects.create(batch=other_batch, annotator=alice, round=4)
    with pytest.raises(export.ExportError, match="has no round 4"):
        export.ExportOptions(format="csv", round=4).check(batch.project)
