"""One name for each annotator throughout a JSONL or CSV export, and the page's download sent as the API sends it."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Assignment, Job, Project
from annotate.services import export, spans
from tests.annotate.test_ingest import example
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def imported_bo(tmp_path: Path) -> Project:
    """The example file imported while an account outside the project holds "Bo": the file's Bo is "Bo (imported)"."""
    make_user("Bo")
    path = tmp_path / "batch_1.json"
    path.write_text(json.dumps(example()), encoding="utf-8")
    call_command("import_faithbench", str(path), "--project", "fb")
    return Project.objects.get(slug="fb")


def test_the_jsonl_export_names_each_annotator_as_the_pages_do(imported_bo: Project) -> None:
    lines = [json.loads(line) for line in export.jsonl_lines(imported_bo, export.ExportOptions(format="jsonl"))]
    shown = set(Assignment.objects.filter(batch__project=imported_bo).values_list("annotator__username", flat=True))
    assert shown == {"Ana", "Bo (imported)"}
    for line in lines:
        annotators = {a["annotator_name"] for a in line["annotations"]}
        assert annotators <= set(line["worst_label_by_annotator"]) == shown


def test_the_csv_export_uses_the_same_names_as_the_jsonl(imported_bo: Project) -> None:
    text = "".join(export.csv_lines(imported_bo, export.ExportOptions(format="csv")))
    lines = export.jsonl_lines(imported_bo, export.ExportOptions(format="jsonl"))
    in_jsonl = {a["annotator_name"] for line in map(json.loads, lines) for a in line["annotations"]}
    assert {row["annotator"] for row in csv.DictReader(io.StringIO(text))} == in_jsonl == {"Ana", "Bo (imported)"}


def test_the_faithbench_export_still_gives_the_files_own_names_back(imported_bo: Project, tmp_path: Path) -> None:
    export.write_faithbench(imported_bo, tmp_path / "out", export.ExportOptions())
    written = json.loads((tmp_path / "out" / "batch_1.json").read_text(encoding="utf-8"))
    assert written == example()


@pytest.mark.parametrize(
    ("fmt", "content_type", "suffix"),
    [("jsonl", "application/jsonl; charset=utf-8", "jsonl"), ("csv", "text/csv; charset=utf-8", "csv"),
     ("faithbench", "application/zip", "zip")],
)
def test_the_page_download_is_sent_as_the_api_sends_it(
    sample: Any, alice: Any, admin_user: Any, fmt: str, content_type: str, suffix: str
) -> None:
    spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    client = login(admin_user)
    client.post("/projects/demo/exports/", {"format": fmt, "round": "1"})
    job = Job.objects.get(kind="export")
    export.run_export_job(job.pk)
    page = client.get(f"/projects/demo/exports/{job.pk}/download/")
    api = client.get(f"/api/projects/demo/export/?format={fmt}")
    assert page.status_code == api.status_code == 200
    assert page["Content-Type"] == api["Content-Type"] == content_type
    assert page["Content-Disposition"] == api["Content-Disposition"] == f'attachment; filename="demo-round1.{suffix}"'

