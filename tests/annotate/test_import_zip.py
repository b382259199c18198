"""A zip archive of span files is imported as the files it holds: FaithLab's own FaithBench export (the API's and
the page's download is a zip) goes back in as it came out, by the API, the page and the command, where the review
got "not UTF-8 text (invalid continuation byte at byte 15)". Members are named ``<archive>/<member>`` in messages;
a member outside plain relative paths or of another kind is refused by name; what the archives unpack to is capped
at the upload limit (a zip bomb is refused, not read)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Batch, Project, Sample, SpanAnnotation
from annotate.services import ingest
from tests.annotate.campaign_helpers import page_text
from tests.annotate.faithbench_refusals import rows
from tests.annotate.test_ingest import example
from tests.conftest import login

pytestmark = pytest.mark.django_db

LINE = {"passage_id": "p9", "source": "Nine. Ten.", "summary": "Nine.", "generator": "g"}


def zipped(members: dict[str, bytes]) -> bytes:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as written:
        for name, content in members.items():
            written.writestr(name, content)
    return archive.getvalue()


def api_export(client: Any) -> bytes:
    answer = client.get("/api/projects/fb/export/?format=faithbench")
    assert answer.status_code == 200 and answer["Content-Type"] == "application/zip"
    return b"".join(answer.streaming_content)


def spans_of(slug: str) -> list[tuple[str, str, int, int]]:
    return sorted(SpanAnnotation.objects.filter(sample__project__slug=slug).values_list(
        "sample__batch__name", "sample__external_id", "start", "end"))


def test_the_apis_faithbench_export_imports_back_through_the_api(
    imported: Batch, project: Project, admin_user: Any
) -> None:
    from tests.annotate.test_api_imports import api_import

    client = login(admin_user)
    answer = api_import(client, [("fb-round1.zip", api_export(client))], format="faithbench")
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert ([batch["name"] for batch in body["batches"]], body["samples"], body["spans"]) == (["batch_1"], 2, 4)
    assert spans_of("demo") == spans_of("fb")


def test_the_page_and_the_command_take_the_zip_too(
    imported: Batch, project: Project, admin_user: Any, tmp_path: Path
) -> None:
    from tests.annotate.test_api_imports import page_import

    client = login(admin_user)
    content = api_export(client)
    page = page_text(page_import(client, [("fb-round1.zip", content)]))
    assert "Imported 1 batch, 2 samples and 4 spans" in page
    path = tmp_path / "fb-round1.zip"
    path.write_bytes(content)
    call_command("import_faithbench", str(path), "--project", "third")
    assert Batch.objects.get(project__slug="third").name == "batch_1"
    assert spans_of("third") == spans_of("fb")


def test_folders_hidden_files_and_macos_copies_are_passed_over_and_jsonl_members_read(project: Project) -> None:
    content = zipped({
        "export/": b"", "export/batch_1.json": json.dumps(example()).encode(), "export/more.jsonl": json.dumps(LINE).encode(),
        "__MACOSX/export/._batch_1.json": b"\x00\x05\x16\x07 resource fork", "export/.DS_Store": b"\x00\x00",
    })
    report = ingest.import_files(project, [("x.zip", content)])
    assert sorted(batch.name for batch in report.batches) == ["batch_1", "more-1"]
    assert Sample.objects.filter(project=project).count() == 3


def test_a_bad_member_is_named_with_its_archive_and_nothing_is_imported(project: Project) -> None:
    document = example()
    document["samples"][0]["summary"] = ""
    content = zipped({"a/../../evil.json": b"{}", "/abs.json": b"{}", "notes.txt": b"hi",
                      "ok/batch_1.json": json.dumps(document).encode()})
    before = rows()
    with pytest.raises(ingest.ImportProblems) as refused:
        ingest.import_files(project, [("x.zip", content), ("y.zip", zipped({"readme.md": b"#"}))])
    assert refused.value.messages == [
        "x.zip: member 'a/../../evil.json' has '..' in its path; an archive of files to import holds plain relative paths",
        "x.zip: member '/abs.json' has an absolute path; an archive of files to import holds plain relative paths",
        "x.zip: member 'notes.txt' is not a .json or .jsonl file; a zip archive to import holds FaithBench .json and "
        "samples .jsonl files only",
        "y.zip: member 'readme.md' is not a .json or .jsonl file; a zip archive to import holds FaithBench .json and "
        "samples .jsonl files only",
    ]
    with pytest.raises(ingest.ImportProblems) as member:
        ingest.import_files(project, [("x.zip", zipped({"ok/batch_1.json": json.dumps(document).encode()}))])
    assert member.value.messages == [
        "x.zip/ok/batch_1.json: sample 0 (#0): field 'summary' is empty; a sample needs its text"]
    assert rows() == before


def test_an_archive_that_unpacks_past_the_upload_limit_is_refused_unread(project: Project, settings: Any) -> None:
    settings.MAX_UPLOAD_MB = 1
    bomb = zipped({"big.json": b" " * (2 * 1024 * 1024)})  # 2 MB of spaces, a few KB zipped
    assert len(bomb) < 10_000
    limit = ("unpacked, the zip archive holds more than the 1 MB limit on imported files (the files of one import "
             "together); unzip it and import its files in turn, or raise the limit with the setting "
             "FAITHLAB_MAX_UPLOAD_MB")
    with pytest.raises(ingest.ImportFailed) as refused:
        ingest.import_files(project, [("bomb.zip", bomb)])
    assert str(refused.value) == f"bomb.zip: {limit}"
    half = b" " * (600 * 1024)
    with pytest.raises(ingest.ImportProblems) as together:  # two archives under the limit each, over it together
        ingest.import_files(project, [("a.zip", zipped({"a.json": half})), ("b.zip", zipped({"b.json": half}))])
    assert together.value.messages[1:] == [f"b.zip: {limit}"]  # after a.json's own fault (it holds only spaces)
    assert rows()["Sample"] == 0


def test_an_unreadable_or_empty_archive_is_named(project: Project) -> None:
    with pytest.raises(ingest.ImportFailed, match=r"^x.zip: not a zip archive that can be read \("):
        ingest.import_files(project, [("x.zip", b"PK\x03\x04 cut short")])
    with pytest.raises(ingest.ImportFailed) as empty:
        ingest.import_files(project, [("e.zip", zipped({"folder/": b""}))])
    assert str(empty.value) == "e.zip: the zip archive holds no .json or .jsonl file to import"
