from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotate.models import Assignment, Project
from annotate.services import export, spans
from annotate.services.export import reading as export_reading

pytestmark = pytest.mark.django_db
EXAMPLE = Path(__file__).parent / "faithbench_example.json"


def quirky_example() -> dict[str, Any]:
    document = json.loads(EXAMPLE.read_text())
    first = document["samples"][0]
    first["annotations"][0]["label"] = ["Unwanted", "Unwanted.Instrinsic"]
    first["annotations"][1]["label"] = ["Unwanted.Extrinsic"]
    # The README of the FaithBench release shows annotations like this: "annotator", no source_* keys.
    variant = first["annotations"][1]
    variant["annotator"] = variant.pop("annotator_id")
    for key in ("source_span", "source_start", "source_end"):
        variant.pop(key, None)
    first["annotations"][2]["note"] = None
    first["annotations"][2]["label"] = []
    first["summary"] = "🌉 " + first["summary"]
    for annotation in first["annotations"]:
        annotation["summary_start"] += 2
        annotation["summary_end"] += 2
    document["samples"][1]["metadata"]["hhem-2.1"] = None
    document["samples"][1]["metadata"]["nested"] = {"a": [1, 2.5, None]}
    document["samples"].append({"sample_id": "s-2", "source": "<b>Bold</b> source.", "summary": "Nothing wrong.",
                                "annotations": [], "metadata": {"summarizer": "x/y"}})
    return document


def test_faithbench_export_gives_the_imported_files_back(tmp_path: Path) -> None:
    originals = {"batch_1": quirky_example(), "batch_2": json.loads(EXAMPLE.read_text())}
    paths = []
    for name, document in originals.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        paths.append(str(path))
    call_command("import_faithbench", *paths, "--project", "fb", "--allow-repeats")  # batch_2 repeats samples
    out = tmp_path / "out"
    call_command("export", "--project", "fb", "--format", "faithbench", "--out", str(out))
    assert sorted(p.name for p in out.iterdir()) == ["batch_1.json", "batch_2.json"]
    for name, document in originals.items():
        assert json.loads((out / f"{name}.json").read_text(encoding="utf-8")) == document


def test_jsonl_and_csv_exports(tmp_path: Path, sample: Any, alice: Any, bob: Any) -> None:
    spans.create_span(sample, alice, round=1, start=51, end=61, labels=["Unwanted.Intrinsic"], note='says "nine"')
    spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    spans.create_span(sample, bob, round=1, start=0, end=7, labels=["Questionable"])
    # cy submitted the batch without a single span: every sample is Consistent for cy.
    cy = get_user_model().objects.create(username="cy")
    Assignment.objects.create(batch=sample.batch, annotator=cy, round=1, status=Assignment.Status.SUBMITTED)
    jsonl = tmp_path / "d.jsonl"
    call_command("export", "--project", "demo", "--format", "jsonl", "--out", str(jsonl))
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert len(lines) == 3
    first = next(line for line in lines if line["sample_id"] == sample.external_id)
    # alice and bob have not submitted: their spans are exported, but only cy's verdict counts, as on the
    # results page (tests/annotate/test_export_worst_label.py has submitters with spans).
    assert first["worst_label_by_annotator"] == {"cy": "Consistent"}
    assert first["worst_label"] == "Consistent"
    others = [line for line in lines if line["sample_id"] != sample.external_id]
    assert all(line["worst_label_by_annotator"] == {"cy": "Consistent"} for line in others)
    assert all(line["worst_label"] == "Consistent" for line in others)
    assert len(first["annotations"]) == 3 and first["source"] == sample.passage.text
    table = tmp_path / "d.csv"
    call_command("export", "--project", "demo", "--format", "csv", "--out", str(table), "--pseudonyms")
    rows = list(csv.DictReader(table.open()))
    assert len(rows) == 3
    assert {r["annotator"] for r in rows} == {"Annotator A", "Annotator B"}  # the project's pseudonyms
    assert any(r["note"] == 'says "nine"' and r["labels"] == "Unwanted|Unwanted.Intrinsic" for r in rows)


def test_export_bad_arguments(tmp_path: Path, project: Project) -> None:
    with pytest.raises(CommandError, match="no project 'nope'"):
        call_command("export", "--project", "nope", "--format", "csv", "--out", str(tmp_path / "x.csv"))
    with pytest.raises(CommandError, match="round"):
        call_command("export", "--project", "demo", "--format", "csv", "--out", str(tmp_path / "x.csv"),
                     "--round", "0")
    (tmp_path / "file").write_text("x")
    with pytest.raises(CommandError, match="is a file"):
        call_command("export", "--project", "demo", "--format", "faithbench", "--out", str(tmp_path / "file"))


def test_export_job_records_who_and_serves_the_file(sample: Any, alice: Any, admin_user: Any, bob: Any,
                                                    charlie: Any) -> None:
    from annotate.models import Job
    from annotate.services import export
    from tests.conftest import login

    spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    client = login(admin_user)
    client.post("/projects/demo/exports/", {"format": "faithbench", "round": "1"})
    job = Job.objects.get(kind="export")
    assert job.created_by == admin_user and job.options == {"format": "faithbench", "round": 1, "pseudonyms": False}
    export.run_export_job(job.pk)
    response = client.get(f"/projects/demo/exports/{job.pk}/download/")
    assert response.status_code == 200 and response["Content-Disposition"].endswith('.zip"')
    assert b"".join(response.streaming_content)[:2] == b"PK"
    assert login(bob).get(f"/projects/demo/exports/{job.pk}/download/").status_code == 403
    assert login(charlie).get(f"/projects/demo/exports/{job.pk}/download/").status_code == 404
    bad = client.post("/projects/demo/exports/", {"format": "xml", "round": "1"}, follow=True)
    assert "format: &#x27;xml&#x27; is not one of" in bad.content.decode()


def test_api_streams_exports_to_admins_only(sample: Any, alice: Any, admin_user: Any, charlie: Any) -> None:
    from tests.conftest import login

    spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    response = login(admin_user).get("/api/projects/demo/export/?format=jsonl")
    assert response.status_code == 200
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["annotations"][0]["annotator_name"] == "alice"
    assert login(alice).get("/api/projects/demo/export/?format=csv").status_code == 403
    assert login(charlie).get("/api/projects/demo/export/?format=csv").status_code == 404
    bad = login(admin_user).get("/api/projects/demo/export/?format=xml")
    assert bad.status_code == 400 and "format" in bad.json()


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_line_exports_report_progress_every_chunk_of_samples(
    tmp_path: Path, sample: Any, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    monkeypatch.setattr(export_reading, "CHUNK", 1)  # a call per sample; the project has 3
    calls: list[int] = []
    export.export_to_path(sample.project, tmp_path / f"d.{fmt}", export.ExportOptions(format=fmt), calls.append)
    assert calls == [1, 2, 3]
