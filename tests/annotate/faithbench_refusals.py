"""Checks shared by the span-project import tests of text the database cannot store (test_import_nul.py,
test_import_surrogates.py): each bad character goes through the same paths (the command, the import form, a JSONL
file, PostgreSQL itself) and must be refused the same way, with nothing written. One helper per path keeps the two
files asserting the same things."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection, transaction

from annotate.models import Assignment, Batch, Job, Membership, Passage, Project, Sample, SpanAnnotation
from annotate.services import ingest
from tests.annotate.test_ingest import example
from tests.conftest import login

Change = Callable[[dict[str, Any]], None]


def rows() -> dict[str, int]:
    """How many rows an import could have written, table by table."""
    models = (Project, Batch, Passage, Sample, SpanAnnotation, Assignment, Membership, Job, get_user_model())
    return {model.__name__: model.objects.count() for model in models}


def faithbench_file(change: Change) -> bytes:
    """The example FaithBench file, changed; json.dumps writes a NUL or a lone surrogate as its escape, as a real
    file would."""
    document = example()
    change(document)
    return json.dumps(document).encode("ascii")


def assert_command_refuses(tmp_path: Path, change: Change, message: str) -> None:
    """``import_faithbench`` refuses the changed file with ``message`` after its path, and writes nothing."""
    path = tmp_path / "batch_1.json"
    path.write_bytes(faithbench_file(change))
    before = rows()
    with pytest.raises(CommandError) as refused:
        call_command("import_faithbench", str(path), "--project", "fb")
    assert str(refused.value) == f"nothing was imported: {path}: {message}"
    assert rows() == before


def assert_import_form_refuses(admin_user: Any, change: Change, message: str) -> None:
    """The project's import form shows ``message`` after the file's name instead of failing, and writes nothing."""
    client = login(admin_user)
    client.raise_request_exception = True  # a DataError or UnicodeEncodeError fails the test, not a 500 page
    before = rows()
    page = client.post("/projects/demo/import/", {"files": SimpleUploadedFile("batch_1.json", faithbench_file(change))},
                       follow=True)
    assert page.status_code == 200
    assert f"Nothing was imported. batch_1.json: {message}" in page.content.decode().replace("&#x27;", "'")
    assert rows() == before


def assert_samples_jsonl_refused(project: Project, lines: list[dict[str, Any]], messages: list[str]) -> None:
    """A samples.jsonl file of ``lines`` is refused with ``messages`` (every bad line, in order), writing nothing."""
    content = "\n".join(json.dumps(line) for line in lines).encode("ascii")
    before = rows()
    with pytest.raises(ingest.ImportProblems) as refused:
        ingest.import_files(project, [("samples.jsonl", content)])
    assert refused.value.messages == messages
    assert rows() == before


def assert_postgresql_refuses(character: str, errors: type[Exception] | tuple[type[Exception], ...]) -> None:
    """The premise of the PostgreSQL tests: the database itself takes ``character`` neither in a text column nor in
    a jsonb key (raising ``errors``), so without the import's check each refusal would be a 500 there."""
    for write in (lambda: Project.objects.create(name=f"a{character}b", slug="unstorable-text"),
                  lambda: Project.objects.create(name="ok", slug="unstorable-json", taxonomy={f"k{character}": 1})):
        with pytest.raises(errors), transaction.atomic():
            write()
    assert connection.vendor == "postgresql"
