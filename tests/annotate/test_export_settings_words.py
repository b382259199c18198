"""A past export's settings in the export form's words: the format's name ("JSONL, a sample a line", not
"jsonl") and the round in words ("round 2 (reconciliation)"), for the span project page's exports table."""

from __future__ import annotations

import re
from typing import Any

import pytest

from annotate.models import Job, Project
from annotate.services import export
from tests.conftest import login

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"format": "faithbench", "round": 1, "pseudonyms": False}, "FaithBench batch files (.zip) · round 1 (independent)"),
        ({"format": "jsonl", "round": 2, "pseudonyms": True},
         "JSONL, a sample a line · round 2 (reconciliation) · pseudonyms instead of names"),
        ({"format": "csv", "round": 3}, "CSV, a span a row · round 3"),
        ({"format": "xml", "round": 1}, "xml · round 1 (independent)"),  # a stored format unknown today, as stored
    ],
)
def test_export_settings_are_described_as_the_form_names_them(options: dict[str, Any], words: str) -> None:
    assert export.describe_options(options) == words


def test_every_export_format_has_a_name() -> None:
    assert set(export.FORMAT_NAMES) == set(export.FORMATS)


def test_the_project_page_gives_each_export_its_settings_in_words(project: Project, admin_user: Any) -> None:
    Job.objects.create(project=project, kind=Job.Kind.EXPORT, status=Job.Status.DONE, created_by=admin_user,
                       options={"format": "faithbench", "round": 1, "pseudonyms": False})
    response = login(admin_user).get("/projects/demo/")
    [job] = response.context["exports"]
    assert job.settings_in_words == "FaithBench batch files (.zip) · round 1 (independent)"


def test_the_exports_table_shows_the_settings_in_words(project: Project, admin_user: Any) -> None:
    Job.objects.create(project=project, kind=Job.Kind.EXPORT, status=Job.Status.DONE, created_by=admin_user,
                       options={"format": "jsonl", "round": 1, "pseudonyms": False})
    html = login(admin_user).get("/projects/demo/").content.decode()
    table = re.search(r'id="exports".*?</section>', html, re.S)
    assert table is not None
    assert "JSONL, a sample a line · round 1 (independent)" in table.group(0)
    assert "jsonl, round 1" not in table.group(0)
