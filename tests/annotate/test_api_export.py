"""The API's FaithBench export (format=faithbench): the imported batch files back, zipped."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Assignment, Job, Membership, Project
from annotate.services import export
from annotate.services.export import faithbench as faithbench_export
from tests.annotate.test_export import EXAMPLE, quirky_example
from tests.conftest import login

pytestmark = pytest.mark.django_db


def test_faithbench_export_over_the_api_gives_the_imported_files_back(tmp_path: Path, admin_user: Any) -> None:
    originals = {"batch_1": quirky_example(), "batch_2": json.loads(EXAMPLE.read_text())}
    paths = []
    for name, document in originals.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        paths.append(str(path))
    call_command("import_faithbench", *paths, "--project", "fb", "--allow-repeats")  # batch_2 repeats samples
    Membership.objects.create(project=Project.objects.get(slug="fb"), user=admin_user, role=Membership.Role.ADMIN)

    response = login(admin_user).get("/api/projects/fb/export/?format=faithbench")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == 'attachment; filename="fb-round1.zip"'
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    files = sorted(name for name in archive.namelist() if name.endswith(".json"))
    assert files == ["fb-round1/batch_1.json", "fb-round1/batch_2.json"]
    for name, document in originals.items():
        assert json.loads(archive.read(f"fb-round1/{name}.json").decode("utf-8")) == document


def test_faithbench_export_follows_the_round_and_pseudonym_options(sample: Any, alice: Any, admin_user: Any) -> None:
    from annotate.services import spans

    spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    response = login(admin_user).get("/api/projects/demo/export/?format=faithbench&pseudonyms=true")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    batch = json.loads(archive.read("demo-round1-pseudonyms/batch-1.json"))  # named apart from the names' export
    annotations = [a for s in batch["samples"] for a in s["annotations"]]
    jsonl = login(admin_user).get("/api/projects/demo/export/?format=jsonl&pseudonyms=true")
    pseudonym = json.loads(b"".join(jsonl.streaming_content).splitlines()[0])["annotations"][0]["annotator_name"]
    assert pseudonym != "alice"
    assert [(a["annotator_name"], a["summary_span"], a["label"]) for a in annotations] == [
        (pseudonym, "Lintown", ["Benign"])
    ]
    Assignment.objects.create(batch=sample.batch, annotator=alice, round=2)  # round 2 exists, with no spans yet
    round_two = login(admin_user).get("/api/projects/demo/export/?format=faithbench&round=2")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(round_two.streaming_content)))
    assert [s["annotations"] for s in json.loads(archive.read("demo-round2/batch-1.json"))["samples"]] == [[], [], []]


def test_faithbench_export_is_for_admins_and_auditors(sample: Any, alice: Any, charlie: Any) -> None:
    refused = login(alice).get("/api/projects/demo/export/?format=faithbench")
    assert refused.status_code == 403
    assert refused.json() == {"detail": "Only the project's admins and auditors may export its data"}
    assert login(charlie).get("/api/projects/demo/export/?format=faithbench").status_code == 404


def _imported_two_batches(tmp_path: Path, admin_user: Any) -> Project:
    """The quirky example and the plain one imported as two batches of project "fb", with admin_user its admin."""
    paths = []
    for name, document in {"batch_1": quirky_example(), "batch_2": json.loads(EXAMPLE.read_text())}.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        paths.append(str(path))
    call_command("import_faithbench", *paths, "--project", "fb", "--allow-repeats")  # batch_2 repeats samples
    project = Project.objects.get(slug="fb")
    Membership.objects.create(project=project, user=admin_user, role=Membership.Role.ADMIN)
    return project


def test_the_streamed_zip_holds_the_export_commands_files_byte_for_byte(tmp_path: Path, admin_user: Any) -> None:
    _imported_two_batches(tmp_path, admin_user)
    call_command("export", "--project", "fb", "--format", "faithbench", "--out", str(tmp_path / "out"))
    written = {f"fb-round1/{path.name}": path.read_bytes() for path in (tmp_path / "out").iterdir()}

    response = login(admin_user).get("/api/projects/fb/export/?format=faithbench")

    assert response.streaming and response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert archive.testzip() is None
    files = {info.filename: archive.read(info) for info in archive.infolist() if not info.is_dir()}
    assert len(written) == 2 and files == written
    assert [info.filename for info in archive.infolist() if info.is_dir()] == ["fb-round1/"]


def test_the_first_chunk_is_sent_before_the_second_batch_is_built(
    tmp_path: Path, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _imported_two_batches(tmp_path, admin_user)
    built: list[str] = []
    read_batch = faithbench_export._batch_samples

    def recording(batch: Any, round: int) -> Any:
        built.append(batch.name)
        return read_batch(batch, round)

    monkeypatch.setattr(faithbench_export, "_batch_samples", recording)  # where the batch files read it
    response = login(admin_user).get("/api/projects/fb/export/?format=faithbench")
    assert built == [], "nothing is built before the response starts"

    chunks = iter(response.streaming_content)
    first = next(chunks)
    assert first.startswith(b"PK\x03\x04")  # a zip entry's local header
    assert built == ["batch_1"]
    rest = b"".join(chunks)
    assert built == ["batch_1", "batch_2"]
    assert sorted(zipfile.ZipFile(io.BytesIO(first + rest)).namelist()) == [
        "fb-round1/", "fb-round1/batch_1.json", "fb-round1/batch_2.json"
    ]


def test_the_page_export_job_writes_the_zip_the_api_streams(tmp_path: Path, admin_user: Any) -> None:
    project = _imported_two_batches(tmp_path, admin_user)
    job = Job.objects.create(project=project, kind=Job.Kind.EXPORT, created_by=admin_user, total=0,
                             options={"format": "faithbench", "round": 1, "pseudonyms": False})
    export.run_export_job(job.pk)
    job.refresh_from_db()
    response = login(admin_user).get("/api/projects/fb/export/?format=faithbench")

    def contents(archive: zipfile.ZipFile) -> dict[str, bytes]:
        return {name: archive.read(name) for name in archive.namelist()}

    from_job = contents(zipfile.ZipFile(job.result_path))
    assert sorted(from_job) == ["fb-round1/", "fb-round1/batch_1.json", "fb-round1/batch_2.json"]
    assert from_job == contents(zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))))
    assert not list(Path(job.result_path).parent.glob("*/")), "no folder of batch files is left beside the zip"
