"""The span import's report names every spelling it took as another spelling's account (usernames ignore case)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from annotate.models import Project, SpanAnnotation
from annotate.services import ingest
from annotate.taxonomy import default_taxonomy
from tests.annotate.test_import_accounts import EXAMPLE, annotated_by, bob_in_project_a
from tests.conftest import login

pytestmark = pytest.mark.django_db


def parsed_by(name: str, file: str = "mine.json") -> ingest.ParsedBatch:
    return ingest.parse_faithbench(json.dumps(annotated_by(name)).encode(), file, default_taxonomy())


def two_spellings(first: str, second: str) -> dict[str, Any]:
    """The example file with Ana's two spans on the first sample spelled ``first`` and ``second``."""
    document = json.loads(EXAMPLE.read_text())
    one, two = document["samples"][0]["annotations"][:2]
    one["annotator_name"], two["annotator_name"] = first, second
    return document


def test_a_file_spelling_merged_into_an_existing_member_is_named(project: Project, bob: Any) -> None:
    report = ingest.import_batches(project, [parsed_by("BOB")])

    assert SpanAnnotation.objects.filter(sample__batch__name="mine", annotator=bob).count() == 2
    assert report.case_merges == [ingest.CaseMerge(account="bob", spellings=["BOB"], existing=True)]
    assert report.describe_case_merges() == [
        "annotator 'BOB' in this import was taken as the project's member 'bob': usernames are compared ignoring "
        "case (different people need names that differ in more than case)."
    ]


def test_two_spellings_in_one_import_are_named_together(tmp_path: Path) -> None:
    path = tmp_path / "batch_1.json"
    path.write_text(json.dumps(two_spellings("New User", "new user")), encoding="utf-8")
    output = io.StringIO()

    call_command("import_faithbench", str(path), "--project", "fb", stdout=output)

    assert list(get_user_model().objects.filter(username__iexact="new user").values_list("username", flat=True)) \
        == ["New User"]
    assert ("warning: annotator names 'New User' and 'new user' in this import were taken as one new annotator, "
            "'New User': usernames are compared ignoring case, so they are one person (different people need names "
            "that differ in more than case).") in output.getvalue()


def test_a_roster_spelling_counts_as_a_spelling_too(tmp_path: Path) -> None:
    document = two_spellings("Dee", "DEE")
    parsed = ingest.parse_faithbench(json.dumps(document).encode(), "r.json", default_taxonomy())
    report = ingest.import_batches(Project.objects.create(name="R", slug="r"), [parsed], roster=["dee", "Bo"])
    assert report.case_merges == [ingest.CaseMerge(account="Dee", spellings=["DEE", "Dee", "dee"], existing=False)]


def test_a_spelling_merged_into_an_account_an_earlier_import_made_is_named() -> None:
    bob_in_project_a()  # "Bob" is taken outside project b: the first import makes "Bob (imported)"
    project_b = Project.objects.create(name="B", slug="b")
    first = ingest.import_batches(project_b, [parsed_by("Bob", "one.json")])
    assert first.renamed == {"Bob": "Bob (imported)"} and first.case_merges == []

    same = ingest.import_batches(project_b, [parsed_by("Bob", "two.json")], allow_repeats=True)
    assert same.case_merges == []  # the import's own name for "Bob", found again as written

    other_case = ingest.import_batches(project_b, [parsed_by("BOB", "three.json")], allow_repeats=True)
    assert other_case.case_merges == [
        ingest.CaseMerge(account="Bob (imported)", spellings=["BOB"], existing=True)
    ]


def test_plain_exact_matches_report_no_merge(project: Project, bob: Any) -> None:
    assert ingest.import_batches(project, [parsed_by("bob")]).case_merges == []
    fresh = ingest.parse_faithbench(EXAMPLE.read_bytes(), "fresh.json", default_taxonomy())
    report = ingest.import_batches(Project.objects.create(name="F", slug="f"), [fresh])
    assert report.case_merges == [] and report.describe_case_merges() == []


def test_the_upload_form_shows_the_merge(project: Project, bob: Any, admin_user: Any) -> None:
    upload = SimpleUploadedFile("up.json", json.dumps(annotated_by("BOB")).encode())
    page = login(admin_user).post("/projects/demo/import/", {"files": [upload]}, follow=True)
    html = page.content.decode().replace("&#x27;", "'")
    assert "Imported 1 batch," in html
    assert "annotator 'BOB' in this import was taken as the project's member 'bob'" in html


def test_by_id_spellings_are_named_as_the_usernames_they_make(tmp_path: Path) -> None:
    document = two_spellings("Ana", "ANA")  # one annotator_id, two spellings
    parsed = ingest.parse_faithbench(json.dumps(document).encode(), "i.json", default_taxonomy())
    report = ingest.import_batches(Project.objects.create(name="I", slug="i"), [parsed], annotators=ingest.BY_ID)
    assert report.case_merges == [
        ingest.CaseMerge(account="Ana (b1-7)", spellings=["ANA (b1-7)", "Ana (b1-7)"], existing=False)
    ]
