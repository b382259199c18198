"""A field the format does not define is never dropped without a word. A samples JSONL line's unknown field (a
misspelt ``metdata``, ``reasoning `` with a space) and a FaithBench file's unknown top-level key were dropped with a
201 and no warning; the import still takes the samples, and now its warnings (the page, the API's ``warnings``, the
command's output) name each such field, how many lines (or files) had it and the first. A FaithBench sample's own
extra keys are kept, as before, with no warning; a JSONL export's own keys get none either."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Project, Sample
from annotate.services import ingest
from tests.annotate.campaign_helpers import page_text
from tests.annotate.test_api_imports import api_import, page_import
from tests.conftest import faithbench_file, login

pytestmark = pytest.mark.django_db

LINES = [
    {"passage_id": "p1", "source": "One. Two.", "summary": "One.", "generator": "g"},
    {"passage_id": "p1", "source": "One. Two.", "summary": "Two.", "generator": "g", "metdata": {"hhem": 0.5}},
    {"passage_id": "p1", "source": "One. Two.", "summary": "Three.", "generator": "g", "metdata": {},
     "reasoning ": "why"},
]
SAMPLE_FIELDS = "passage_id, source, summary, generator, sample_id, batch, metadata"
METDATA = (f"Field 'metdata' is not defined by the samples JSONL format and was not imported: 2 lines had it, the "
           f"first s.jsonl: line 2; the rest of each line was imported. The fields defined by the samples JSONL "
           f"format are {SAMPLE_FIELDS}: check the spelling.")
REASONING = (f"Field 'reasoning ' is not defined by the samples JSONL format and was not imported: 1 line had it, the "
             f"first s.jsonl: line 3; the rest of the line was imported. The fields defined by the samples JSONL "
             f"format are {SAMPLE_FIELDS}: check the spelling.")
VERSION = ("Field 'version' is not defined at the top level of a FaithBench batch file and was not imported: 1 file "
           "had it, the first fb.json; the rest of the file was imported. The fields defined at the top level of a "
           "FaithBench batch file are samples, roster: check the spelling.")


def samples_jsonl() -> bytes:
    return "\n".join(json.dumps(line) for line in LINES).encode()


def faithbench_with_version() -> bytes:
    document = json.loads(faithbench_file([{"sample_id": 0, "source": "One. Two.", "summary": "One.",
                                            "metadata": {"summarizer": "g"}}]))
    return json.dumps({**document, "version": 2}).encode()


def summaries(slug: str) -> list[tuple[str, dict[str, Any]]]:
    return list(Sample.objects.filter(project__slug=slug).order_by("id").values_list("summary", "metadata"))


def test_the_api_names_each_unknown_jsonl_field_its_count_and_first_line(project: Project, admin_user: Any) -> None:
    answer = api_import(login(admin_user), [("s.jsonl", samples_jsonl())], format="jsonl")
    assert answer.status_code == 201
    assert answer.json()["warnings"] == [METDATA, REASONING]
    assert summaries("demo") == [("One.", {}), ("Two.", {}), ("Three.", {})]


def test_the_page_names_them_too(project: Project, admin_user: Any) -> None:
    page = page_text(page_import(login(admin_user), [("s.jsonl", samples_jsonl())]))
    assert METDATA in page and REASONING in page
    assert Sample.objects.filter(project=project).count() == 3


def test_the_command_prints_them(db: None, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(samples_jsonl())
    out = io.StringIO()
    call_command("import_faithbench", str(path), "--project", "fresh", stdout=out)
    # The command names a file by the path it was given, as its errors do.
    assert out.getvalue().splitlines()[1:] == [f"warning: {warning.replace(' s.jsonl:', f' {path}:')}"
                                               for warning in (METDATA, REASONING)]
    assert [summary for summary, _ in summaries("fresh")] == ["One.", "Two.", "Three."]


def test_the_first_line_is_the_first_in_the_file_though_its_batch_comes_later(project: Project) -> None:
    """Named batches come before the grouped ones; the warning still names the file's first line."""
    lines = [{**LINES[0], "metdata": {}}, {**LINES[1], "batch": "named"}]
    report = ingest.import_files(project, [("s.jsonl", "\n".join(json.dumps(line) for line in lines).encode())])
    assert [(field.name, field.count, field.first) for field in report.unknown_fields] == [
        ("metdata", 2, "s.jsonl: line 1")]


def test_the_api_names_an_unknown_top_level_key_of_a_faithbench_file(project: Project, admin_user: Any) -> None:
    answer = api_import(login(admin_user), [("fb.json", faithbench_with_version())], format="faithbench")
    assert answer.status_code == 201
    assert (answer.json()["warnings"], answer.json()["samples"]) == ([VERSION], 1)


def test_the_command_prints_an_unknown_top_level_key(db: None, tmp_path: Path) -> None:
    path = tmp_path / "fb.json"
    path.write_bytes(faithbench_with_version())
    out = io.StringIO()
    call_command("import_faithbench", str(path), "--project", "fresh", stdout=out)
    assert out.getvalue().splitlines()[1:] == [f"warning: {VERSION.replace(' fb.json;', f' {path};')}"]
    assert summaries("fresh") == [("One.", {"summarizer": "g"})]


def test_a_faithbench_sample_keeps_its_extra_keys_without_a_warning(project: Project) -> None:
    content = faithbench_file([{"sample_id": 0, "source": "One. Two.", "summary": "One.", "judged_by": "x"}])
    report = ingest.import_files(project, [("fb.json", content)])
    assert report.warnings() == []
    assert Sample.objects.get(project=project).imported_fields["judged_by"] == "x"


def test_a_jsonl_exports_own_keys_get_no_warning(project: Project) -> None:
    line = {**LINES[0], "round": 1, "worst_label": None, "worst_label_by_annotator": {}, "adjudicated": None,
            "gold_stale": False, "annotations": []}
    report = ingest.import_files(project, [("s.jsonl", json.dumps(line).encode())])
    assert (report.unknown_fields, report.warnings()) == ([], [])
