"""The advice given when one annotator name carries several annotator_ids can be followed as written.

Importing the same files again into the same project fails (a project takes a batch name once), so the
advice must say to import them into a new project.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from annotate.models import Project, SpanAnnotation
from tests.annotate.test_ingest import two_people_called_ana, write
from tests.conftest import login

pytestmark = pytest.mark.django_db


def run_import(*paths: Path, project: str, extra: tuple[str, ...] = ()) -> str:
    out = io.StringIO()
    call_command("import_faithbench", *map(str, paths), "--project", project, *extra, stdout=out)
    return out.getvalue()


def test_the_command_says_to_import_by_id_into_a_new_project_and_that_works(tmp_path: Path) -> None:
    first, second = two_people_called_ana()
    paths = [write(tmp_path, "a.json", first), write(tmp_path, "b.json", second)]
    output = run_import(*paths, project="fb")
    assert (
        "If they are different people, import again with --annotators by-id. Import into a new project "
        "(--project NEW-SLUG): 'fb' now holds these batches, and a project takes each batch name once."
    ) in output
    # The same project refuses the files a second time, as the advice says ...
    with pytest.raises(CommandError, match="batch 'a' already exists in project 'fb'"):
        run_import(*paths, project="fb", extra=("--annotators", "by-id"))
    # ... and a new project takes them, with the two people kept apart.
    run_import(*paths, project="fb-by-id", extra=("--annotators", "by-id"))
    kept_apart = SpanAnnotation.objects.filter(sample__project__slug="fb-by-id", annotator__username__startswith="Ana (")
    assert sorted(set(kept_apart.values_list("annotator__username", flat=True))) == ["Ana (b1-7)", "Ana (b2-a)"]


def test_the_upload_form_says_to_import_into_a_new_project(project: Project, admin_user: Any) -> None:
    first, second = two_people_called_ana()
    files = [SimpleUploadedFile("a.json", json.dumps(first).encode()),
             SimpleUploadedFile("b.json", json.dumps(second).encode())]
    page = login(admin_user).post("/projects/demo/import/", {"files": files}, follow=True)
    html = page.content.decode().replace("&#x27;", "'")
    assert (
        "If they are different people, import again matching annotators by id. Import into a new project: "
        "this one now holds these batches, and a project takes each batch name once."
    ) in html
