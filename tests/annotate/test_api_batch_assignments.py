"""Assigning annotators to a batch through the API: by username, admins only, with the project page's Assign rule
(the project's annotators, round 1, someone already assigned kept as they are); each username at fault named, and
nothing assigned then. The page and the API make the same assignments."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Assignment, Batch, Membership, Project
from tests.annotate.campaign_helpers import api_json, campaign_state, rolled_back
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db


def url(batch: Batch) -> str:
    return f"/api/batches/{batch.pk}/assignments/"


def held(batch: Batch) -> list[tuple[str, int]]:
    return sorted(Assignment.objects.filter(batch=batch).values_list("annotator__username", "round"))


@pytest.fixture
def carol(project: Project) -> Any:
    """A third annotator of the project, on no batch yet."""
    user = make_user("carol")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    return user


def test_an_admin_assigns_annotators_by_username_and_gets_the_batchs_assignments(batch: Batch, admin_user: Any,
                                                                                 carol: Any) -> None:
    answer = api_json(login(admin_user), "post", url(batch), {"annotators": ["carol", "alice"]})
    assert answer.status_code == 200
    body = answer.json()
    assert body["added"] == ["carol"]  # alice held round 1 already: kept, not added again
    assert [(row["annotator"], row["round"], row["status"]) for row in body["assignments"]] == [
        ("alice", 1, "assigned"), ("bob", 1, "assigned"), ("carol", 1, "assigned")]
    assert held(batch) == [("alice", 1), ("bob", 1), ("carol", 1)]


def test_the_get_lists_the_same_assignments(batch: Batch, admin_user: Any) -> None:
    answer = login(admin_user).get(url(batch))
    assert answer.status_code == 200
    assert answer.json()["batch"] == batch.pk and "added" not in answer.json()
    assert [row["annotator"] for row in answer.json()["assignments"]] == ["alice", "bob"]


def test_the_api_and_the_page_make_the_same_assignments(batch: Batch, admin_user: Any, carol: Any) -> None:
    admin = login(admin_user)
    _, by_api = rolled_back(lambda: api_json(admin, "post", url(batch), {"annotators": ["carol"]}), campaign_state)
    _, by_page = rolled_back(
        lambda: admin.post("/projects/demo/assign/", {"batch": batch.pk, "annotators": [carol.pk]}), campaign_state)
    assert by_api == by_page and ("batch-1", "carol", 1, "assigned", False) in by_api["assignments"]


def test_any_case_finds_the_user_as_the_members_page_does(batch: Batch, admin_user: Any, carol: Any) -> None:
    answer = api_json(login(admin_user), "post", url(batch), {"annotators": ["CAROL"]})
    assert answer.status_code == 200 and answer.json()["added"] == ["carol"]


def test_unknown_usernames_are_each_named_and_nothing_is_assigned(batch: Batch, admin_user: Any, carol: Any) -> None:
    before = held(batch)
    answer = api_json(login(admin_user), "post", url(batch), {"annotators": ["carol", "nobody", "ghost"]})
    assert answer.status_code == 400
    assert answer.json() == {"annotators": ["no user is called 'nobody', 'ghost'; nothing was assigned"]}
    assert held(batch) == before


def test_someone_who_is_no_annotator_of_the_project_is_named(batch: Batch, admin_user: Any, carol: Any,
                                                             charlie: Any) -> None:
    before = held(batch)
    answer = api_json(login(admin_user), "post", url(batch), {"annotators": ["carol", "charlie"]})
    assert answer.status_code == 400
    [message] = answer.json()["annotators"]
    assert message.startswith("charlie is not an annotator of 'demo'") and "nothing was assigned" in message
    assert held(batch) == before  # carol, who was fine, is not assigned either


@pytest.mark.parametrize(("body", "field"), [
    ({}, "annotators"),
    ({"annotators": []}, "annotators"),
    ({"annotators": "carol"}, "annotators"),
    ({"annotators": ["carol"], "round": 2}, "round"),
])
def test_a_bad_body_is_400_naming_the_field(batch: Batch, admin_user: Any, carol: Any, body: dict[str, Any],
                                            field: str) -> None:
    answer = api_json(login(admin_user), "post", url(batch), body)
    assert answer.status_code == 400 and field in answer.json()
    assert held(batch) == [("alice", 1), ("bob", 1)]


@pytest.mark.parametrize("method", ["get", "post"])
def test_an_annotator_of_the_batch_is_refused_and_an_outsider_sees_no_batch(
    batch: Batch, alice: Any, charlie: Any, carol: Any, method: str
) -> None:
    body = {"annotators": ["carol"]}
    assert api_json(login(alice), method, url(batch), body if method == "post" else None).status_code == 403
    assert api_json(login(charlie), method, url(batch), body if method == "post" else None).status_code == 404
    assert held(batch) == [("alice", 1), ("bob", 1)]
