"""A project's members through the API: listed, added by username with a role, given another role, removed, by the
project's admins only, with the members page's rules and words; the page and the API do the same to the same data."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from annotate.models import Assignment, Batch, Membership, Project, SpanAnnotation
from annotate.services.pairs import flags as pair_flags
from tests.annotate.campaign_helpers import api_json, campaign_state, page_text, rolled_back
from tests.annotate.member_helpers import give_work
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db

MEMBERS = "/api/projects/demo/members/"


def member(username: str) -> str:
    return f"{MEMBERS}{username}/"


def roles(project: Project) -> dict[str, str]:
    return dict(Membership.objects.filter(project=project).values_list("user__username", "role"))


# --------------------------------------------------------------------------- listing


def test_an_admin_lists_every_member_with_role_and_assignments(batch: Batch, admin_user: Any) -> None:
    give_work(batch, batch.assignments.get(annotator__username="alice").annotator)
    answer = login(admin_user).get(MEMBERS)
    assert answer.status_code == 200
    listed = {row["username"]: row for row in answer.json()}
    assert {name: row["role"] for name, row in listed.items()} == {"adam": "admin", "alice": "annotator",
                                                                  "bob": "annotator"}
    alice_round = Assignment.objects.get(batch=batch, annotator__username="alice")
    assert listed["alice"]["assignments"] == [{"id": alice_round.pk, "batch": batch.pk, "batch_name": "batch-1",
                                               "round": 1, "status": "assigned", "reopened": False}]
    assert listed["adam"]["assignments"] == [] and listed["adam"]["can_log_in"] is True
    assert "answers_given" not in listed["alice"]  # a span project's members judge no pairs


def test_a_pairs_projects_members_come_with_their_answers_and_block(two_item_pairs: Project, admin_user: Any,
                                                                   alice: Any) -> None:
    pair_flags.block_judge(two_item_pairs, alice, admin_user, "answered at random")
    listed = {row["username"]: row for row in login(admin_user).get("/api/projects/pairs/members/").json()}
    assert listed["alice"]["judge_blocked"] is True and listed["bob"]["judge_blocked"] is False
    assert listed["alice"]["answers_given"] == 0 and listed["alice"]["assignments"] == []


# --------------------------------------------------------------------------- adding


def test_adding_an_existing_user_answers_201_and_a_member_again_200_with_the_new_role(
    project: Project, admin_user: Any, charlie: Any
) -> None:
    admin = login(admin_user)
    added = api_json(admin, "post", MEMBERS, {"username": "charlie", "role": "auditor"})
    assert added.status_code == 201
    assert added.json() == {"username": "charlie", "role": "auditor", "can_log_in": True, "assignments": []}
    changed = api_json(admin, "post", MEMBERS, {"username": "CHARLIE", "role": "curator"})  # any case, as the page
    assert changed.status_code == 200 and changed.json()["role"] == "curator"
    assert roles(project)["charlie"] == "curator"


# The API's own words where the page's point at its forms (tests/annotate/test_api_campaign_words.py).
@pytest.mark.parametrize(("body", "field", "message", "api_message"), [
    ({"username": "nobody", "role": "annotator"}, "username",
     "Username: no user is called 'nobody'; create them under \"Create a user\" below",
     "no user is called 'nobody'; the API adds existing users only: an admin creates users on the project's "
     "members page (Create a user), then add them here"),
    ({"username": "charlie", "role": "boss"}, "role",
     "Role: 'boss' is not a role here; choose admin, annotator, auditor or curator",
     "'boss' is not a role; send one of admin, annotator, auditor or curator"),
    ({"username": " ", "role": "annotator"}, "username", "Type the username of the person to add.",
     "Type the username of the person to add."),
])
def test_a_bad_addition_is_400_naming_the_field_and_adds_nobody(
    project: Project, admin_user: Any, charlie: Any, body: dict[str, str], field: str, message: str, api_message: str
) -> None:
    before = roles(project)
    answer = api_json(login(admin_user), "post", MEMBERS, body)
    assert answer.status_code == 400 and answer.json() == {field: [api_message]}
    page = login(admin_user).post("/projects/demo/members/", body)
    assert page.status_code == 400 and message in page_text(page)
    assert roles(project) == before


def test_an_addition_with_a_field_it_does_not_take_is_refused_by_name(project: Project, admin_user: Any,
                                                                     charlie: Any) -> None:
    answer = api_json(login(admin_user), "post", MEMBERS, {"username": "charlie", "role": "auditor", "email": "c@x"})
    assert answer.status_code == 400 and list(answer.json()) == ["email"]
    assert "charlie" not in roles(project)


# --------------------------------------------------------------------------- changing a role


def test_an_admin_changes_a_role(project: Project, admin_user: Any) -> None:
    answer = api_json(login(admin_user), "patch", member("bob"), {"role": "curator"})
    assert answer.status_code == 200 and answer.json()["role"] == "curator"
    assert roles(project)["bob"] == "curator"


def test_the_last_admin_keeps_their_role_409_as_the_page_refuses_it(project: Project, admin_user: Any) -> None:
    answer = api_json(login(admin_user), "patch", member("adam"), {"role": "annotator"})
    message = "adam is the last admin of Demo and cannot be given another role; make someone else admin first"
    assert answer.status_code == 409 and answer.json() == {"detail": message}
    page = login(admin_user).post(f"/projects/demo/members/{Membership.objects.get(user=admin_user).pk}/role/",
                                  {"role": "annotator"})
    assert page.status_code == 400 and message in page_text(page)
    assert roles(project)["adam"] == "admin"


def test_an_annotator_with_open_assignments_stays_one(batch: Batch, admin_user: Any) -> None:
    answer = api_json(login(admin_user), "patch", member("alice"), {"role": "auditor"})
    assert answer.status_code == 409
    assert answer.json()["detail"].startswith("alice still holds open assignments (batch-1 round 1)")
    assert roles(batch.project)["alice"] == "annotator"


def test_a_role_change_without_a_role_or_with_a_bad_one_is_400(project: Project, admin_user: Any) -> None:
    admin = login(admin_user)
    assert list(api_json(admin, "patch", member("bob"), {}).json()) == ["role"]
    bad = api_json(admin, "patch", member("bob"), {"role": "boss"})
    assert bad.status_code == 400 and bad.json()["role"][0].startswith("'boss' is not a role;")
    assert roles(project)["bob"] == "annotator"


# --------------------------------------------------------------------------- removing


def test_removing_a_member_drops_their_unstarted_assignments(batch: Batch, admin_user: Any) -> None:
    answer = login(admin_user).delete(member("bob"))
    assert answer.status_code == 200 and answer.json() == {"username": "bob", "assignments_dropped": 1}
    assert "bob" not in roles(batch.project)
    assert not Assignment.objects.filter(annotator__username="bob").exists()


def test_a_member_with_work_in_an_open_assignment_is_not_removed(batch: Batch, admin_user: Any, alice: Any) -> None:
    give_work(batch, alice)
    answer = login(admin_user).delete(member("alice"))
    assert answer.status_code == 409
    assert answer.json()["detail"].startswith("alice has work in open assignments (batch-1 round 1)")
    assert "alice" in roles(batch.project) and SpanAnnotation.objects.filter(annotator=alice).exists()


def test_the_last_admin_is_not_removed(project: Project, admin_user: Any) -> None:
    answer = login(admin_user).delete(member("adam"))
    assert answer.status_code == 409 and "last admin" in answer.json()["detail"]
    assert roles(project)["adam"] == "admin"


def test_a_user_who_is_no_member_is_404_for_a_change_and_a_removal(project: Project, admin_user: Any,
                                                                   charlie: Any) -> None:
    admin = login(admin_user)
    assert api_json(admin, "patch", member("charlie"), {"role": "annotator"}).status_code == 404
    assert admin.delete(member("charlie")).status_code == 404
    assert admin.delete(member("no%20such")).status_code == 404  # not a username at all: no member either
    assert "charlie" not in roles(project)


# --------------------------------------------------------------------------- who may


def test_only_the_projects_admins_manage_members(batch: Batch, alice: Any, charlie: Any) -> None:
    project = batch.project
    auditor = make_user("audrey")
    Membership.objects.create(project=project, user=auditor, role=Membership.Role.AUDITOR)
    before = roles(project)
    calls = [("get", MEMBERS, None), ("post", MEMBERS, {"username": "charlie", "role": "admin"}),
             ("patch", member("bob"), {"role": "admin"}), ("delete", member("bob"), None)]
    for method, url, body in calls:
        assert api_json(login(alice), method, url, body).status_code == 403, (method, url)
        assert api_json(login(auditor), method, url, body).status_code == 403, (method, url)
        assert api_json(login(charlie), method, url, body).status_code == 404, (method, url)
        anonymous = api_json(Client(), method, url, body)
        assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"] == "Token", (method, url)
    # The access check comes before the body is read: an outsider's bad body is the same 404.
    assert api_json(login(charlie), "post", MEMBERS, {"stray": 1}).status_code == 404
    assert api_json(login(alice), "patch", member("bob"), {"stray": 1}).status_code == 403
    assert roles(project) == before


# --------------------------------------------------------------------------- the page and the API agree


@pytest.mark.parametrize(("action", "target", "form"), [
    ("add", None, {"username": "charlie", "role": "auditor"}),
    ("add", None, {"username": "alice", "role": "curator"}),  # open assignments: both refuse it
    ("add", None, {"username": "ghost", "role": "annotator"}),
    ("role", "dora", {"role": "curator"}),
    ("role", "bob", {"role": "admin"}),  # open assignments
    ("role", "adam", {"role": "auditor"}),  # the last admin
    ("remove", "dora", {}),
    ("remove", "bob", {}),  # an unstarted assignment goes with him
    ("remove", "alice", {}),  # work in an open assignment: refused
])
def test_the_page_and_the_api_leave_the_same_members(
    batch: Batch, admin_user: Any, alice: Any, charlie: Any, action: str, target: str | None, form: dict[str, str]
) -> None:
    """dora is an annotator without assignments, alice has work in hers; the page answers with the members page."""
    Membership.objects.create(project=batch.project, user=make_user("dora"), role=Membership.Role.ANNOTATOR)
    give_work(batch, alice)
    admin = login(admin_user)
    target_id = Membership.objects.get(project=batch.project, user__username=target).pk if target else None
    page_url = {"add": "/projects/demo/members/", "role": f"/projects/demo/members/{target_id}/role/",
                "remove": f"/projects/demo/members/{target_id}/remove/"}[action]
    api_call = {"add": ("post", MEMBERS, form), "role": ("patch", member(str(target)), form),
                "remove": ("delete", member(str(target)), None)}[action]
    page, by_page = rolled_back(lambda: admin.post(page_url, form), campaign_state)
    answer, by_api = rolled_back(lambda: api_json(admin, *api_call), campaign_state)
    assert by_api == by_page
    assert (answer.status_code < 300) == (page.status_code == 200), (answer.status_code, page.status_code)
    if answer.status_code == 409:  # a refused change, in the page's words
        assert answer.json()["detail"] in page_text(page)
    elif answer.status_code == 400:  # bad input, worded for a script (test_api_campaign_words.py): the same value
        assert "'ghost'" in answer.json()["username"][0] and "'ghost'" in page_text(page)
    assert by_page != campaign_state() or answer.status_code >= 400  # a success changed something
