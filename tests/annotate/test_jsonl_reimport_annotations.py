"""A span project's JSONL export carries each sample's annotations; the samples JSONL format imports samples only
(DESIGN: unannotated samples, a JSON object a line), so importing that export again dropped every annotation with a
201 and "0 spans" (the review). The import still takes the samples, and now says, on the page, in the API's
``warnings`` and ``unread_annotations`` and in the command's output, how many lines carried annotations it did not
import and which format carries them (FaithBench). A ``sample_id`` given as a number stays a number in the exports."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Batch, Project, Sample, SpanAnnotation
from annotate.services import ingest
from tests.annotate.campaign_helpers import page_text
from tests.conftest import login

pytestmark = pytest.mark.django_db

WARNING = ("2 lines carried annotations (4 in all), which the samples JSONL format does not import: their samples "
           "were imported without them. FaithBench batch files carry annotations: to bring them in, import the "
           "project's FaithBench export (format faithbench) into a new project instead.")


def jsonl_export(tmp_path: Path) -> Path:
    out = tmp_path / "fb.jsonl"
    call_command("export", "--project", "fb", "--format", "jsonl", "--out", str(out))
    assert sum(len(json.loads(line)["annotations"]) for line in out.read_text().splitlines()) == 4
    return out


def test_the_command_says_which_annotations_it_left_out(imported: Batch, tmp_path: Path) -> None:
    out = io.StringIO()
    call_command("import_faithbench", str(jsonl_export(tmp_path)), "--project", "again", stdout=out)
    assert out.getvalue().splitlines()[1] == f"warning: {WARNING}"
    assert Sample.objects.filter(project__slug="again").count() == 2
    assert not SpanAnnotation.objects.filter(sample__project__slug="again").exists()


def test_the_api_and_the_page_say_so_too(imported: Batch, project: Project, admin_user: Any, tmp_path: Path) -> None:
    from tests.annotate.test_api_imports import api_import, page_import

    content = jsonl_export(tmp_path).read_bytes()
    client = login(admin_user)
    answer = api_import(client, [("fb.jsonl", content)], format="jsonl")
    assert answer.status_code == 201
    body = answer.json()
    assert (body["warnings"], body["unread_annotations"], body["spans"]) == ([WARNING], 4, 0)
    Batch.objects.filter(project=project).delete()
    assert WARNING in page_text(page_import(client, [("fb.jsonl", content)]))


def test_lines_without_annotations_get_no_warning(project: Project) -> None:
    line = {"passage_id": "p1", "source": "One. Two.", "summary": "One.", "generator": "g", "annotations": []}
    report = ingest.import_files(project, [("s.jsonl", json.dumps(line).encode())])
    assert (report.unread_annotations, report.warnings()) == (0, [])


def test_a_numeric_sample_id_stays_a_number_in_the_exports(project: Project, tmp_path: Path) -> None:
    lines = [{"passage_id": "p1", "source": "One. Two.", "summary": "One.", "generator": "g", "sample_id": 0},
             {"passage_id": "p1", "source": "One. Two.", "summary": "Two.", "generator": "g", "sample_id": "0b"},
             {"passage_id": "p1", "source": "One. Two.", "summary": "Three.", "generator": "g"}]
    ingest.import_files(project, [("s.jsonl", "\n".join(json.dumps(line) for line in lines).encode())])
    call_command("export", "--project", "demo", "--format", "faithbench", "--out", str(tmp_path / "fb"))
    call_command("export", "--project", "demo", "--format", "jsonl", "--out", str(tmp_path / "s.jsonl"))
    faithbench = json.loads((tmp_path / "fb" / "s-1.json").read_text())["samples"]
    exported = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    # A line without one takes its line number, as text, as before.
    assert [sample["sample_id"] for sample in faithbench] == [0, "0b", "3"]
    assert [line["sample_id"] for line in exported] == [0, "0b", "3"]


def test_a_sample_id_that_is_no_string_or_number_is_refused(project: Project) -> None:
    line = {"passage_id": "p1", "source": "One. Two.", "summary": "One.", "generator": "g", "sample_id": None}
    with pytest.raises(ingest.ImportFailed) as refused:
        ingest.import_files(project, [("s.jsonl", json.dumps(line).encode())])
    assert str(refused.value) == "s.jsonl: line 1: field 'sample_id' must be a string or a whole number, found null"
