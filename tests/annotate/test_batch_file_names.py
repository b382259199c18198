"""A batch's name is a file's name: a FaithBench export writes each batch as ``<batch name>.json``. Imports refuse a
name that is no safe file name (a path separator, a leading dot, a control character, what Windows refuses), naming
the file, the line and the field, and write nothing; exports make any stored name (older data's) a safe, unique
file name and never write outside their folder or put a path into their zip.

The review's repro files (batch "/tmp/.../ABSOLUTE", "../../ESCAPED", "sub/dir", "..", "CON", "a\\b:c*?") wrote
files outside the export's folder (absolute and ../ paths), failed with a traceback (a missing sub-folder), and
put "../../" entries into the API's and the page's zip.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Batch, Job, Passage, Project, Sample
from annotate.services import agreement_admin, export, ingest
from tests.annotate.campaign_helpers import page_text
from tests.annotate.faithbench_refusals import rows
from tests.annotate.test_ingest import example
from tests.conftest import login

pytestmark = pytest.mark.django_db

SOURCE = "The bridge opened in 1911. It is long."
ABSOLUTE = "/tmp/w9-files/ABSOLUTE"  # noqa: S108  (a name an import refuses; nothing is written there)
# The review's files, as gen.py wrote them (sj-batch-absolute.jsonl, sj-batch-traversal.jsonl, sj-batch-names5.jsonl).
REVIEW_FILES = {
    "sj-batch-absolute.jsonl": [ABSOLUTE],
    "sj-batch-traversal.jsonl": ["../../ESCAPED"],
    "sj-batch-names5.jsonl": ["../../../tmp/w9-files/pwned", "sub/dir", "..", "CON", "a\\b:c*?"],
}
SEPARATOR = "holds {!r}, which a file name cannot hold (nor any of < > : \" / \\ | ? *)"
WHY = ": an export writes each batch as a file '<batch name>.json', so a batch name must be a safe file name"
PROBLEMS = {
    ABSOLUTE: SEPARATOR.format("/"),
    "../../ESCAPED": SEPARATOR.format("/"),
    "../../../tmp/w9-files/pwned": SEPARATOR.format("/"),
    "sub/dir": SEPARATOR.format("/"),
    "..": "starts with '.', which makes a hidden file ('.' and '..' name folders)",
    "CON": "is a device name on Windows (CON), which no file may take",
    "a\\b:c*?": SEPARATOR.format("\\"),
}


def review_file(name: str) -> bytes:
    lines = [{"passage_id": f"p{number}", "source": f"{SOURCE} ({number})", "summary": f"It opened in 19{number}.",
              "generator": "org/a", "batch": batch} for number, batch in enumerate(REVIEW_FILES[name], start=1)]
    return "\n".join(json.dumps(line) for line in lines).encode()


def expected(name: str, path: str | None = None) -> list[str]:
    return [f"{path or name}: line {number}: field 'batch' {batch!r} {PROBLEMS[batch]}{WHY}"
            for number, batch in enumerate(REVIEW_FILES[name], start=1)]


@pytest.mark.parametrize("name", list(REVIEW_FILES))
def test_the_command_refuses_the_review_files_naming_line_and_field(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(review_file(name))
    before = rows()
    with pytest.raises(CommandError) as refused:
        call_command("import_faithbench", str(path), "--project", "trav")
    messages = expected(name, str(path))
    text = messages[0] if len(messages) == 1 else f"{len(messages)} errors:\n" + "\n".join(messages)
    assert str(refused.value) == f"nothing was imported: {text}"
    assert rows() == before


@pytest.mark.parametrize("name", list(REVIEW_FILES))
def test_the_page_and_the_api_refuse_the_review_files(project: Project, admin_user: Any, name: str) -> None:
    from tests.annotate.test_api_imports import api_import, page_import

    client = login(admin_user)
    before = rows()
    answer = api_import(client, [(name, review_file(name))], format="jsonl")
    assert (answer.status_code, answer.json()) == (400, {"file": expected(name)})
    page = page_text(page_import(client, [(name, review_file(name))]))
    assert all(message in page for message in expected(name))
    assert rows() == before


def test_a_faithbench_file_name_that_is_no_safe_batch_name_is_refused(project: Project, admin_user: Any) -> None:
    from tests.annotate.test_api_imports import api_import

    before = rows()
    answer = api_import(login(admin_user), [(".hidden.json", json.dumps(example()).encode()),
                                            ("trailing..json", json.dumps(example()).encode())], format="faithbench")
    assert answer.status_code == 400
    assert answer.json()["file"] == [
        ".hidden.json: the batch name '.hidden' (the file name without its extension) starts with '.', which makes a "
        f"hidden file ('.' and '..' name folders){WHY}; rename the file",
        "trailing..json: the batch name 'trailing.' (the file name without its extension) ends with a dot or a space, "
        f"which Windows drops from a file name{WHY}; rename the file",
    ]
    assert rows() == before


def test_a_command_path_is_not_a_batch_name_but_its_file_name_is(tmp_path: Path) -> None:
    """The command names the batch after the file's own name, the folders before it left out; a backslash in the
    name (a folder on Windows) is refused."""
    good = tmp_path / "sub" / "batch_1.json"
    good.parent.mkdir()
    good.write_text(json.dumps(example()))
    call_command("import_faithbench", str(good), "--project", "fb")
    assert list(Batch.objects.values_list("name", flat=True)) == ["batch_1"]
    odd = tmp_path / "a\\b.json"
    odd.write_text(json.dumps(example()))
    with pytest.raises(CommandError, match=r"the batch name 'a\\\\b' \(the file name without its extension\) holds"):
        call_command("import_faithbench", str(odd), "--project", "fb2")


def test_jsonl_lines_without_a_batch_take_a_name_from_the_file_which_must_be_safe(project: Project) -> None:
    line = json.dumps({"passage_id": "p1", "source": SOURCE, "summary": "It opened.", "generator": "g"})
    with pytest.raises(ingest.ImportFailed) as refused:
        ingest.import_files(project, [(".samples.jsonl", line.encode())])
    assert str(refused.value) == (
        ".samples.jsonl: the batch name '.samples-1' (the file name without its extension and a number, for the lines "
        "without a 'batch') starts with '.', which makes a hidden file ('.' and '..' name folders)"
        f"{WHY}; rename the file or give those lines a 'batch'"
    )


def test_the_results_page_prefix_for_new_batches_must_make_safe_names(project: Project) -> None:
    passage = Passage.objects.create(project=project, external_id="p1", text=SOURCE)
    batch = Batch.objects.create(project=project, name="b")
    Sample.objects.create(project=project, passage=passage, batch=batch, external_id="0", summary="It opened.")
    with pytest.raises(agreement_admin.AgreementAdminError) as refused:
        agreement_admin.create_batches_from_selection(project, [passage.pk], "../hard")
    assert refused.value.field == "name_prefix"
    assert refused.value.message == f"the batch name '../hard-1' {SEPARATOR.format('/')}{WHY}"
    assert list(Batch.objects.values_list("name", flat=True)) == ["b"]


# --- exports of names stored before imports refused them ---------------------------------------------------------

ABSOLUTE_HERE = "<tmp_path>/ABSOLUTE"  # an absolute path inside the test's folder: old code wrote the file there
STORED = [ABSOLUTE_HERE, "../../ESCAPED", "sub/dir", "..", "CON", "a\\b:c*?", "Batch", "batch", "sub_dir", ".hidden",
          "ok name"]
# What each becomes, in order: a safe name keeps its own (and a safe one wins its name from a renamed one: "sub_dir");
# names that clash ignoring case are numbered.
EXPORTED = ["<tmp_path>_ABSOLUTE.json", "_._.._ESCAPED.json", "sub_dir-2.json", "__.json", "_CON.json",
            "a_b_c__.json", "Batch.json", "batch-2.json", "sub_dir.json", "_hidden.json", "ok name.json"]


def here(name: str, tmp_path: Path) -> str:
    """``name`` with the test's folder for ``<tmp_path>``: as a stored batch name, or as the file name made of it."""
    return name.replace("<tmp_path>", str(tmp_path) if name.endswith("ABSOLUTE") else str(tmp_path).replace("/", "_"))


@pytest.fixture
def unsafe_names(project: Project, tmp_path: Path) -> list[str]:
    """A project whose batches carry names imports now refuse, as one imported before could; the file names an
    export gives them, in batch order."""
    passage = Passage.objects.create(project=project, external_id="p1", text=SOURCE)
    for position, name in enumerate(STORED):
        batch = Batch.objects.create(project=project, name=here(name, tmp_path), position=position)
        Sample.objects.create(project=project, passage=passage, batch=batch, external_id="0", summary=f"S {position}.")
    return [here(name, tmp_path) for name in EXPORTED]


def test_the_export_command_writes_every_batch_inside_its_folder_under_a_safe_unique_name(
    unsafe_names: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "deep" / "out"
    call_command("export", "--project", "demo", "--format", "faithbench", "--out", str(out))
    written = sorted(path.relative_to(tmp_path).as_posix() for path in tmp_path.rglob("*") if path.is_file())
    assert written == sorted(f"deep/out/{name}" for name in unsafe_names)
    for position, name in enumerate(unsafe_names):  # each file holds its own batch
        assert json.loads((out / name).read_text())["samples"][0]["summary"] == f"S {position}."


def test_the_api_zip_and_the_page_export_hold_only_safe_entries(unsafe_names: list[str], admin_user: Any) -> None:
    client = login(admin_user)
    streamed = client.get("/api/projects/demo/export/?format=faithbench")
    assert streamed.status_code == 200
    client.post("/projects/demo/exports/", {"format": "faithbench", "round": "1"})
    job = Job.objects.get(kind=Job.Kind.EXPORT)
    export.run_export_job(job.pk)
    page = client.get(f"/projects/demo/exports/{job.pk}/download/")
    for body in (b"".join(streamed.streaming_content), b"".join(page.streaming_content)):
        names = zipfile.ZipFile(io.BytesIO(body)).namelist()
        assert names == ["demo-round1/", *(f"demo-round1/{name}" for name in unsafe_names)]


def test_the_faithbench_writer_refuses_a_name_that_would_leave_its_folder(
    batch: Batch, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second lock: were a name ever unsafe (export_file_names is the first), nothing lands outside."""
    from annotate.services.export import faithbench

    monkeypatch.setattr(faithbench, "export_file_names", lambda names: ["../escaped.json" for _ in names])
    with pytest.raises(export.ExportError, match="would be written outside"):
        faithbench.write_faithbench(batch.project, tmp_path / "out", export.ExportOptions())
    assert not (tmp_path / "escaped.json").exists()


def test_a_reimported_export_keeps_every_safe_name(imported: Batch, tmp_path: Path) -> None:
    """An export of imported files gives each back under its own name, so a re-import makes the same batches."""
    call_command("export", "--project", "fb", "--format", "faithbench", "--out", str(tmp_path))
    assert [path.name for path in tmp_path.iterdir()] == ["batch_1.json"]
    call_command("import_faithbench", str(tmp_path / "batch_1.json"), "--project", "again")
    assert Batch.objects.get(project__slug="again").name == "batch_1"
