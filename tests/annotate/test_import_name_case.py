"""The span importer compares usernames case-insensitively, as the members page does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotate.models import Assignment, Batch, Membership, Project, SpanAnnotation
from annotate.services import ingest, members
from annotate.taxonomy import default_taxonomy
from tests.annotate.test_import_accounts import EXAMPLE, annotated_by, bob_in_project_a
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db


def usernames_like(prefix: str) -> list[str]:
    return sorted(get_user_model().objects.filter(username__istartswith=prefix).values_list("username", flat=True),
                  key=str.lower)


def test_a_name_held_outside_the_project_in_another_case_gets_a_new_account() -> None:
    bob = bob_in_project_a()
    project_b = Project.objects.create(name="B", slug="b")
    parsed = ingest.parse_faithbench(json.dumps(annotated_by("Bob")).encode(), "one.json", default_taxonomy())

    report = ingest.import_batches(project_b, [parsed])

    # Not a second "Bob" beside "bob": the members page would call them one name.
    assert report.renamed == {"Bob": "Bob (imported)"}
    assert usernames_like("bob") == ["bob", "Bob (imported)"]
    assert not Membership.objects.filter(project=project_b, user=bob).exists()
    newcomer = get_user_model().objects.get(username="Bob (imported)")
    assert SpanAnnotation.objects.filter(sample__project=project_b, annotator=newcomer).count() == 2
    assert report.describe_renamed() == [
        "annotator 'Bob': that username belongs to an account outside this project, and an import gives no "
        "existing account access to a project, so the spans went to a new account, 'Bob (imported)'."
    ]


def test_the_imported_name_is_looked_for_in_any_case_too() -> None:
    bob_in_project_a()
    make_user("BOB (IMPORTED)")  # someone else's account, outside the project
    project_b = Project.objects.create(name="B", slug="b")
    parsed = ingest.parse_faithbench(json.dumps(annotated_by("Bob")).encode(), "one.json", default_taxonomy())
    assert ingest.import_batches(project_b, [parsed]).renamed == {"Bob": "Bob (imported 2)"}
    # A re-import finds the member it made, whatever the case of the file's spelling.
    again = ingest.parse_faithbench(json.dumps(annotated_by("BOB")).encode(), "two.json", default_taxonomy())
    again.name = "two"
    report = ingest.import_batches(project_b, [again], allow_repeats=True)  # the same samples again
    assert report.renamed == {}
    assert report.annotators == ["Bo", "Bob (imported 2)"]
    assert usernames_like("bob") == ["bob", "Bob (imported 2)", "BOB (IMPORTED)"]


def test_a_member_of_the_project_in_another_case_is_that_member(project: Project, bob: Any, tmp_path: Path) -> None:
    """bob is a member of the fixture project: the file's "Bob" is him (the admin added him on purpose)."""
    document = annotated_by("Bob")
    parsed = ingest.parse_faithbench(json.dumps(document).encode(), "mine.json", default_taxonomy())
    report = ingest.import_batches(project, [parsed])
    assert report.renamed == {}
    assert SpanAnnotation.objects.filter(sample__batch__name="mine", annotator=bob).count() == 2
    assert usernames_like("bob") == ["bob"]
    # The export writes the file's own spelling back.
    call_command("export", "--project", project.slug, "--format", "faithbench", "--out", str(tmp_path))
    assert json.loads((tmp_path / "mine.json").read_text(encoding="utf-8")) == document
    # And the members page agrees that "Bob" is bob's name.
    with pytest.raises(members.MemberError, match="'bob' is taken"):
        members.clean_username("Bob")


def test_two_spellings_of_one_name_in_a_file_are_one_account(tmp_path: Path) -> None:
    document = json.loads(EXAMPLE.read_text())
    first, second = document["samples"][0]["annotations"][:2]  # both Ana's
    first["annotator_name"], second["annotator_name"] = "Dee", "DEE"
    path = tmp_path / "batch_1.json"
    path.write_text(json.dumps(document), encoding="utf-8")

    call_command("import_faithbench", str(path), "--project", "fb", "--roster", "dee,Bo")

    project = Project.objects.get(slug="fb")
    assert usernames_like("dee") == ["Dee"]
    dee = get_user_model().objects.get(username="Dee")
    assert SpanAnnotation.objects.filter(annotator=dee).count() == 2
    batch = Batch.objects.get(project=project)
    assert sorted(Assignment.objects.filter(batch=batch).values_list("annotator__username", flat=True)) == [
        "Bo", "Dee"
    ]
    assert Membership.objects.filter(project=project, user=dee).count() == 1
    call_command("export", "--project", "fb", "--format", "faithbench", "--out", str(tmp_path / "out"))
    assert json.loads((tmp_path / "out" / "batch_1.json").read_text(encoding="utf-8")) == document


def test_the_members_page_adds_an_existing_user_typed_in_another_case(project: Project, admin_user: Any,
                                                                       charlie: Any) -> None:
    """Adding "CHARLIE" used to answer "no user called 'CHARLIE'", and creating him "'charlie' is taken"."""
    response = login(admin_user).post("/projects/demo/members/", {"username": "CHARLIE", "role": "curator"})
    assert response.status_code == 200 and "charlie is curator of Demo." in response.content.decode()
    assert Membership.objects.get(project=project, user=charlie).role == "curator"
    # Where an older import left two spellings, the exact one is chosen.
    upper = make_user("Charlie")
    members.add_member(project, "Charlie", "annotator")
    assert Membership.objects.get(project=project, user=upper).role == "annotator"
    assert Membership.objects.get(project=project, user=charlie).role == "curator"
