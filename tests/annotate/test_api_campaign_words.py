"""The campaign API in its own words: an unknown username or a bad role is told to a script without the members
page's pointers at its forms ("... below"), while the page keeps its message; an import sent as JSON is told to send
multipart/form-data with `file` and `format`, not that the `format` it sent is missing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotate.models import Membership, Project, Sample
from tests.annotate.campaign_helpers import api_json, page_text
from tests.conftest import login

pytestmark = pytest.mark.django_db

MEMBERS = "/api/projects/demo/members/"
IMPORTS = "/api/projects/demo/imports/"


def roles(project: Project) -> dict[str, str]:
    return dict(Membership.objects.filter(project=project).values_list("user__username", "role"))


def test_an_unknown_username_is_told_where_users_are_made_without_the_pages_below(project: Project,
                                                                                  admin_user: Any) -> None:
    before = roles(project)
    answer = api_json(login(admin_user), "post", MEMBERS, {"username": "nobody", "role": "annotator"})
    assert answer.status_code == 400
    [message] = answer.json()["username"]
    assert "'nobody'" in message and "members page" in message and "admin creates users" in message
    assert "below" not in message and not message.startswith("Username:")
    assert roles(project) == before


def test_the_members_page_keeps_its_own_words(project: Project, admin_user: Any) -> None:
    page = login(admin_user).post("/projects/demo/members/", {"username": "nobody", "role": "annotator"})
    assert page.status_code == 400
    assert "Username: no user is called 'nobody'; create them under \"Create a user\" below" in page_text(page)


@pytest.mark.parametrize(("method", "url", "body"), [
    ("post", MEMBERS, {"username": "bob", "role": "owner"}),
    ("patch", f"{MEMBERS}bob/", {"role": "owner"}),
])
def test_a_bad_role_is_named_with_the_roles_to_send(project: Project, admin_user: Any, method: str, url: str,
                                                   body: dict[str, str]) -> None:
    before = roles(project)
    answer = api_json(login(admin_user), method, url, body)
    assert answer.status_code == 400
    assert answer.json() == {"role": ["'owner' is not a role; send one of admin, annotator, auditor or curator"]}
    assert roles(project) == before


@pytest.mark.parametrize(("content", "content_type", "sent"), [
    (json.dumps({"format": "jsonl", "file": "{}"}), "application/json", "application/json"),
    ("format=jsonl", "application/x-www-form-urlencoded", "application/x-www-form-urlencoded"),
    ("", "", "untyped"),
])
def test_an_import_that_is_not_multipart_is_told_to_send_file_and_format_as_multipart(
    project: Project, admin_user: Any, content: str, content_type: str, sent: str
) -> None:
    answer = login(admin_user).generic("POST", IMPORTS, content, content_type=content_type)
    assert answer.status_code == 400
    assert list(answer.json()) == ["file"]  # not "format: This field is required." about the format it sent
    [message] = answer.json()["file"]
    assert message.startswith(f"The body must be multipart/form-data (this one is {sent})")
    assert "'file'" in message and "'format'" in message and "nothing was imported" in message
    assert not Sample.objects.exists()
