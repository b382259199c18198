"""What the project's pages say to its admins: an Assign with nobody chosen, a fill that could not reach the number
asked, a new user whose name is a member's in another case, exports with pseudonyms named apart from those with
names, and resolved flags in the sample browser said in words."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from annotate.models import Assignment, Batch, Job, Membership, Project
from annotate.services import export, flags, projects, spans
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db


def messages_of(response: Any) -> list[str]:
    return [str(message) for message in response.context["messages"]]


# --------------------------------------------------------------------------- assigning


def test_assign_with_no_annotator_chosen_is_refused(batch: Batch, admin_user: Any) -> None:
    before = Assignment.objects.count()
    response = login(admin_user).post("/projects/demo/assign/", {"batch": str(batch.pk)}, follow=True)
    assert messages_of(response) == [
        "annotators: choose at least one annotator to give 'batch-1' to; nothing was assigned"]
    assert Assignment.objects.count() == before
    with pytest.raises(projects.ProjectError, match="choose at least one annotator"):
        projects.assign_annotators(batch, [])


def test_assign_counts_only_the_assignments_it_made(batch: Batch, alice: Any, admin_user: Any) -> None:
    carol = make_user("carol")
    Membership.objects.create(project=batch.project, user=carol, role=Membership.Role.ANNOTATOR)
    response = login(admin_user).post("/projects/demo/assign/", {"batch": str(batch.pk),
                                                                 "annotators": [str(alice.pk), str(carol.pk)]},
                                      follow=True)
    assert messages_of(response) == ["1 assignment made."]  # alice held it already


def test_filling_evenly_says_each_batch_got_fewer_than_asked_and_why(project: Project, admin_user: Any) -> None:
    carol = make_user("carol")
    Membership.objects.create(project=project, user=carol, role=Membership.Role.ANNOTATOR)
    imported = get_user_model().objects.create_user(username="Ana")  # no password: an imported annotator
    Membership.objects.create(project=project, user=imported, role=Membership.Role.ANNOTATOR)
    for name in ("b1", "b2"):
        Batch.objects.create(project=project, name=name)
    response = login(admin_user).post("/projects/demo/assign/", {"per_batch": "5"}, follow=True)
    assert messages_of(response) == [
        "6 assignments made.",
        "Each batch got only 3 of the 5 annotators asked, because the project has 3 annotators who can log in (1 "
        "other without a password or inactive, e.g. imported, never assigned). Add annotators on the members "
        "page, then fill again.",
    ]
    again = login(admin_user).post("/projects/demo/assign/", {"per_batch": "2"}, follow=True)
    assert messages_of(again) == ["0 assignments made."]  # every batch has its 2 already: nothing to warn of
    refused = login(admin_user).post("/projects/demo/assign/", {"per_batch": "0"}, follow=True)
    assert messages_of(refused) == ["per_batch: annotators per batch must be 1 or more, not 0"]


def test_a_fill_that_leaves_some_batches_short_names_them(project: Project, alice: Any, bob: Any) -> None:
    full = Batch.objects.create(project=project, name="full")
    short = Batch.objects.create(project=project, name="short")
    outsider = make_user("old-hand")  # assigned once, no longer an annotator here
    Assignment.objects.create(batch=full, annotator=outsider)
    filled = projects.assign_batches_evenly(project, 3)
    assert filled.made == 4 and filled.short == [("short", 2)]
    assert filled.warning() == (
        "1 batch got only 2 of the 3 annotators asked, because the project has 2 annotators who can log in. Add "
        "annotators on the members page, then fill again.")
    assert Assignment.objects.filter(batch=short).count() == 2


# --------------------------------------------------------------------------- members


def test_creating_a_members_name_in_another_case_says_they_are_a_member(project: Project, admin_user: Any) -> None:
    ines = make_user("ines")
    Membership.objects.create(project=project, user=ines, role=Membership.Role.ANNOTATOR)
    form = {"username": "INES", "email": "", "role": "annotator", "access": "invite"}
    response = login(admin_user).post("/projects/demo/members/new/", form)
    assert response.status_code == 400
    assert ("Username: 'ines' is already a member of this project, as annotator (usernames are compared ignoring "
            "case, so 'INES' is that name)") in response.content.decode().replace("&#x27;", "'")
    assert not get_user_model().objects.filter(username="INES").exists()


def test_a_name_taken_outside_the_project_still_points_to_add_an_existing_user(
    project: Project, admin_user: Any, charlie: Any
) -> None:
    form = {"username": "Charlie", "email": "", "role": "annotator", "access": "invite"}
    response = login(admin_user).post("/projects/demo/members/new/", form)
    assert response.status_code == 400
    assert "Username: 'charlie' is taken; to give that user a role here, use \"Add an existing user\"" in (
        response.content.decode().replace("&#x27;", "'").replace("&quot;", '"'))


# --------------------------------------------------------------------------- export names


@pytest.mark.parametrize(("fmt", "suffix"), [("jsonl", "jsonl"), ("csv", "csv"), ("faithbench", "zip")])
def test_an_export_with_pseudonyms_is_named_apart_from_one_with_names(
    sample: Any, alice: Any, admin_user: Any, fmt: str, suffix: str
) -> None:
    spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    client = login(admin_user)
    named = client.get(f"/api/projects/demo/export/?format={fmt}")
    hidden = client.get(f"/api/projects/demo/export/?format={fmt}&pseudonyms=true")
    assert named["Content-Disposition"] == f'attachment; filename="demo-round1.{suffix}"'
    assert hidden["Content-Disposition"] == f'attachment; filename="demo-round1-pseudonyms.{suffix}"'
    client.post("/projects/demo/exports/", {"format": fmt, "round": "1", "pseudonyms": "on"})
    job = Job.objects.get(kind="export")
    export.run_export_job(job.pk)
    page = client.get(f"/projects/demo/exports/{job.pk}/download/")
    assert page["Content-Disposition"] == f'attachment; filename="demo-round1-pseudonyms.{suffix}"'
    if fmt == "faithbench":  # the zip's folder too, so that both unpack side by side
        names = zipfile.ZipFile(io.BytesIO(b"".join(hidden.streaming_content))).namelist()
        assert names == ["demo-round1-pseudonyms/", "demo-round1-pseudonyms/batch-1.json"]


# --------------------------------------------------------------------------- resolved flags


def test_a_resolved_flag_says_resolved_in_words(batch: Batch, alice: Any, bob: Any, admin_user: Any) -> None:
    first, second, *_ = batch.samples.order_by("position")
    flags.flag_sample(first, bob, round=1, kind="broken", comment="cut off")
    done, _ = flags.flag_sample(second, alice, round=1, kind="skip", comment="")
    flags.resolve_flag(done, admin_user)
    html = login(admin_user).get(f"/projects/demo/batches/{batch.pk}/samples/").content.decode()
    assert 'data-role="flag">Skip by alice <strong data-role="flag-resolved">(resolved)</strong></span>' in html
    assert 'data-role="flag">Broken by bob: <bdi>cut off</bdi></span>' in html
