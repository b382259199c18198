"""Span imports say what is wrong and where, in the review's cases: a passage whose text differs names its file and
line; a file in another encoding says which and how to fix it (UTF-16, Latin-1, gzip), as the pair importers do; a
file in the other span format says which format it looks like, instead of one JSON error a line or "Extra data";
a folder given to the command is called a folder."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Project
from annotate.services import ingest
from tests.annotate.campaign_helpers import page_text
from tests.annotate.faithbench_refusals import rows
from tests.annotate.test_ingest import example
from tests.conftest import login

pytestmark = pytest.mark.django_db

LINE = {"passage_id": "p1", "source": "One. Two.", "summary": "One.", "generator": "g"}
DIFFERENT = ("field 'source': passage 'p1' already exists with a different source text (in the project, or from an "
             "earlier file of this import); a passage_id names one source text")


def jsonl(*lines: dict[str, Any]) -> bytes:
    return "\n".join(json.dumps(line) for line in lines).encode()


def refusal(project: Project, *files: tuple[str, bytes]) -> str:
    before = rows()
    with pytest.raises(ingest.ImportFailed) as refused:
        ingest.import_files(project, list(files))
    assert rows() == before
    return str(refused.value)


def test_a_passage_whose_text_differs_is_named_by_file_and_line(project: Project) -> None:
    ingest.import_files(project, [("first.jsonl", jsonl(LINE))])
    other = {**LINE, "source": "One. Three.", "summary": "Three.", "sample_id": "s7"}
    assert refusal(project, ("second.jsonl", jsonl({**LINE, "passage_id": "p5", "source": "Five."}, other))) == (
        f"second.jsonl: line 2 (sample_id 's7'): {DIFFERENT}")
    # Two files of one import, each sound on its own.
    assert refusal(project, ("a.jsonl", jsonl({**LINE, "passage_id": "p2"})),
                   ("b.jsonl", jsonl({**LINE, "passage_id": "p2", "source": "Else.", "summary": "Else."}))) == (
        f"b.jsonl: line 1 (sample_id '1'): {DIFFERENT.replace('p1', 'p2')}")


def test_other_encodings_and_compressed_files_say_what_they_are(project: Project) -> None:
    latin = json.dumps(example(), ensure_ascii=False).replace("Ana", "Anà").encode("latin-1")
    at = latin.index("Anà".encode("latin-1")) + 2
    assert refusal(project, ("b.json", latin)) == (
        f"b.json: not UTF-8 text (invalid continuation byte at byte {at}); save it as UTF-8")
    latin_line = json.dumps({**LINE, "summary": "Öne."}, ensure_ascii=False).encode("latin-1")
    at = latin_line.index("Ö".encode("latin-1"))
    assert refusal(project, ("s.jsonl", latin_line)) == (
        f"s.jsonl: not UTF-8 text (invalid continuation byte at byte {at}); save it as UTF-8 JSONL")
    assert refusal(project, ("b.json", json.dumps(example()).encode("utf-16"))) == (
        "b.json: this is UTF-16 text, not UTF-8: save it as UTF-8 (an editor's Save as, encoding UTF-8)")
    assert refusal(project, ("s.jsonl", jsonl(LINE).decode().encode("utf-16-le"))) == (
        "s.jsonl: this is UTF-16 text, not UTF-8: save it as UTF-8 JSONL (an editor's Save as, encoding UTF-8)")
    assert refusal(project, ("b.json", gzip.compress(json.dumps(example()).encode()))) == (
        "b.json: this is a gzip-compressed file, not a text file: decompress it (gunzip) and import the file it holds")


def test_a_faithbench_file_sent_as_jsonl_says_so_once(project: Project, admin_user: Any) -> None:
    from tests.annotate.test_api_imports import api_import

    advice = ("this looks like a FaithBench batch file (one JSON object with a list of samples under 'samples'), not "
              "samples JSONL (a JSON object a line): import it as format faithbench (on the project page, a .json "
              "file)")
    for content in (json.dumps(example(), indent=1).encode(), json.dumps(example()).encode()):
        answer = api_import(login(admin_user), [("batch_1.json", content)], format="jsonl")
        assert (answer.status_code, answer.json()) == (400, {"file": [f"batch_1.json: {advice}"]})
    listed = json.dumps([LINE, LINE | {"summary": "Two."}], indent=1).encode()
    assert refusal(project, ("s.jsonl", listed)) == (
        "s.jsonl: this is one JSON list of 2 items spread over several lines, not samples JSONL: write each sample as "
        "a JSON object on a line of its own (jq -c '.[]' does)")


def test_samples_jsonl_named_json_says_what_it_looks_like(project: Project, admin_user: Any) -> None:
    from tests.annotate.test_api_imports import page_import

    page = page_text(page_import(login(admin_user), [("samples.json", jsonl(LINE, LINE | {"summary": "Two."}))]))
    assert ("samples.json: not valid JSON: Extra data at line 2 column 1; it looks like samples JSONL (a JSON object "
            "a line, with passage_id, source and summary): import it as format jsonl (on the project page, name the "
            "file .jsonl)") in page


def test_a_folder_given_to_the_command_is_called_a_folder(tmp_path: Path) -> None:
    with pytest.raises(CommandError) as refused:
        call_command("import_faithbench", str(tmp_path), "--project", "fb")
    assert str(refused.value) == f"{tmp_path}: is a directory; name the files in it (e.g. {tmp_path / '*.json'})"
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_faithbench", str(tmp_path / "missing.json"), "--project", "fb")


@pytest.mark.parametrize("command", ["import_pairs", "import_judgements"])
def test_the_other_import_commands_call_a_folder_a_folder_too(tmp_path: Path, command: str) -> None:
    with pytest.raises(CommandError) as refused:
        call_command(command, str(tmp_path), "--project", "demo")
    assert str(refused.value) == f"{tmp_path}: is a directory; name the files in it (e.g. {tmp_path / '*.jsonl'})"
