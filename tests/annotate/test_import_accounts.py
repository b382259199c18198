"""An import never gives an existing login account access to a project it is not a member of."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from annotate.models import Assignment, Batch, Membership, Project, Sample, SpanAnnotation
from annotate.services import ingest
from annotate.taxonomy import default_taxonomy
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db
EXAMPLE = Path(__file__).parent / "faithbench_example.json"


def annotated_by(name: str) -> dict[str, Any]:
    """The team's example file with Ana's spans given to ``name`` (Bo keeps his)."""
    document = json.loads(EXAMPLE.read_text())
    for sample in document["samples"]:
        for annotation in sample["annotations"]:
            if annotation["annotator_name"] == "Ana":
                annotation["annotator_name"] = name
    return document


def bob_in_project_a() -> Any:
    bob = make_user("bob")
    project_a = Project.objects.create(name="A", slug="a")
    Membership.objects.create(project=project_a, user=bob, role=Membership.Role.ANNOTATOR)
    return bob


def test_a_name_held_by_someone_outside_the_project_gets_a_new_account(tmp_path: Path) -> None:
    bob = bob_in_project_a()
    document = annotated_by("bob")
    path = tmp_path / "batch_1.json"
    path.write_text(json.dumps(document), encoding="utf-8")

    output = io.StringIO()
    call_command("import_faithbench", str(path), "--project", "b", stdout=output)
    assert ("warning: annotator 'bob': that username belongs to an account outside this project, and an import "
            "gives no existing account access to a project, so the spans went to a new account, 'bob (imported)'."
            ) in output.getvalue()

    project_b = Project.objects.get(slug="b")
    assert not Membership.objects.filter(project=project_b, user=bob).exists()
    assert not Assignment.objects.filter(batch__project=project_b, annotator=bob).exists()
    assert not SpanAnnotation.objects.filter(sample__project=project_b, annotator=bob).exists()
    sample = Sample.objects.filter(project=project_b).order_by("position").first()
    assert login(bob).get(f"/projects/b/samples/{sample.pk}/").status_code == 404
    assert login(bob).get(f"/api/samples/{sample.pk}/").status_code == 404
    assert login(bob).get("/projects/b/").status_code == 404

    # Ana's two spans on the first sample (now bob's in the file) belong to a new account that cannot log in.
    newcomer = get_user_model().objects.get(username="bob (imported)")
    assert not newcomer.has_usable_password()
    assert SpanAnnotation.objects.filter(sample__project=project_b, annotator=newcomer).count() == 2
    assert Membership.objects.filter(project=project_b, user=newcomer, role=Membership.Role.ANNOTATOR).exists()
    assert sorted(Assignment.objects.filter(batch__project=project_b).values_list("annotator__username", flat=True)) \
        == ["Bo", "bob (imported)"]

    out = tmp_path / "out"
    call_command("export", "--project", "b", "--format", "faithbench", "--out", str(out))
    assert json.loads((out / "batch_1.json").read_text(encoding="utf-8")) == document


def test_the_report_names_who_got_a_new_account_and_a_re_import_finds_them_again() -> None:
    bob_in_project_a()
    make_user("bob (imported)")  # even the first new name is taken elsewhere
    project_b = Project.objects.create(name="B", slug="b")
    first = ingest.parse_faithbench(json.dumps(annotated_by("bob")).encode(), "one.json", default_taxonomy())

    report = ingest.import_batches(project_b, [first])

    assert report.renamed == {"bob": "bob (imported 2)"}
    assert report.annotators == ["Bo", "bob (imported 2)"]
    assert report.describe_renamed() == [
        "annotator 'bob': that username belongs to an account outside this project, and an import gives no "
        "existing account access to a project, so the spans went to a new account, 'bob (imported 2)'."
    ]
    # A second file by the same people: bob is now the member made by the first import, not a third account.
    second = copy.deepcopy(first)
    second.name, second.file = "two", "two.json"
    again = ingest.import_batches(project_b, [second], allow_repeats=True)  # the same samples: a second copy
    assert again.renamed == {}
    assert again.annotators == ["Bo", "bob (imported 2)"]
    assert get_user_model().objects.filter(username__startswith="bob").count() == 3
    batch = Batch.objects.get(project=project_b, name="two")
    assert SpanAnnotation.objects.filter(sample__batch=batch, annotator__username="bob (imported 2)").count() == 2


def test_a_name_that_is_already_a_member_of_the_project_is_that_member(project: Project, bob: Any) -> None:
    """The fixture project holds bob: an import into it by 'bob' is his (the admin added him on purpose)."""
    parsed = ingest.parse_faithbench(json.dumps(annotated_by("bob")).encode(), "mine.json", default_taxonomy())
    report = ingest.import_batches(project, [parsed])
    assert report.renamed == {}
    assert SpanAnnotation.objects.filter(sample__project=project, annotator=bob).count() == 2
    assert not get_user_model().objects.filter(username__startswith="bob (").exists()


def test_by_id_names_held_elsewhere_and_roster_names_get_new_accounts_too(tmp_path: Path) -> None:
    outsider = make_user("Bo (b1-0)")
    cy = make_user("Cy")
    path = tmp_path / "r.json"
    document = json.loads(EXAMPLE.read_text())
    path.write_text(json.dumps(document), encoding="utf-8")
    call_command("import_faithbench", str(path), "--project", "fb", "--annotators", "by-id", "--roster", "Ana,Bo,Cy")
    project = Project.objects.get(slug="fb")
    assert not Membership.objects.filter(project=project, user__in=[outsider, cy]).exists()
    submitted = Batch.objects.get(project=project).assignments.values_list("annotator__username", flat=True)
    assert sorted(submitted) == ["Ana (b1-7)", "Bo (b1-0) (imported)", "Cy (imported)"]
    call_command("export", "--project", "fb", "--format", "faithbench", "--out", str(tmp_path / "out"))
    # The command's roster named Cy, who has no span: the file now says who annotated it, Cy by the name the app
    # gave him (no file spelled it); the others by their annotations' names.
    roster = {"roster": ["Ana", "Bo", "Cy (imported)"]}
    assert json.loads((tmp_path / "out" / "r.json").read_text(encoding="utf-8")) == {**document, **roster}


def test_the_upload_form_says_which_names_got_new_accounts(project: Project, admin_user: Any) -> None:
    make_user("Ana")  # an account with no project at all is still someone else's login
    upload = SimpleUploadedFile("up.json", EXAMPLE.read_bytes())
    page = login(admin_user).post("/projects/demo/import/", {"files": [upload]}, follow=True)
    html = page.content.decode().replace("&#x27;", "'")
    assert "Imported 1 batch," in html
    assert "annotator 'Ana': that username belongs to an account outside this project" in html
    assert "so the spans went to a new account, 'Ana (imported)'." in html
