"""Messages of the members page, the batch annotators page and imports are in the app's own words: a field is
named by its label as the page shows it ("Username", not "username:"), a refusal says who and what (no
"assignment:" prefix), no Django or Python English ("Ensure this value ...", "got NoneType"). The two annotator
dropdowns of the batch page mark users without a password alike.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from annotate.models import Membership
from annotate.services import ingest
from tests.annotate.member_helpers import HTMX, give_work
from tests.conftest import login

pytestmark = pytest.mark.django_db

# What the old messages began with: the code's names of the fields, and Django's validator English.
INTERNAL_PREFIX = re.compile(r"^(username|role|email|password|access|member|assignment|annotator): ")
LIBRARY_ENGLISH = ("Ensure this value", "Enter a valid", "NoneType", "got int", "got list")


def error_of(response: Any) -> str:
    found = re.search(r'data-role="error">(.*?)</p>', response.content.decode(), re.S)
    assert found, "the answer shows no error"
    return html.unescape(found.group(1)).strip()


def field_error_of(response: Any, field: str) -> str:
    """The message the members page shows beside a field of a refused form."""
    found = re.search(rf'data-error-for="{field}">(.*?)</span>', response.content.decode(), re.S)
    assert found, f"the answer shows no error beside {field}"
    return html.unescape(found.group(1)).strip()


def assert_own_words(message: str) -> None:
    assert not INTERNAL_PREFIX.match(message), message
    assert not any(phrase in message for phrase in LIBRARY_ENGLISH), message


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"username": "Alice"}, "Username: 'alice' is already a member of this project, as annotator (usernames are "
                                "compared ignoring case, so 'Alice' is that name)"),
        ({"username": "e" * 151}, "Username: at most 150 characters (this one has 151)"),
        ({"username": "pat k"}, "Username: use letters, digits and . @ + - _ only (spaces cannot be used)"),
        ({"email": "pat@"}, "Email: 'pat@' is not an email address"),
        ({"role": "boss"}, "Role: 'boss' is not a role here; choose admin, annotator, auditor or curator"),
    ],
)
def test_creating_a_user_names_the_field_by_its_label(
    project: Any, admin_user: Any, alice: Any, fields: dict[str, str], message: str
) -> None:
    form = {"username": "pat", "email": "", "role": "annotator", "access": "invite", **fields}
    response = login(admin_user).post("/projects/demo/members/new/", form, **HTMX)
    assert response.status_code == 400
    field = next(iter(fields))
    assert field_error_of(response, field) == message
    assert_own_words(field_error_of(response, field))
    assert not get_user_model().objects.filter(username__startswith="pat").exists()


def test_member_refusals_say_who_and_why(batch: Any, admin_user: Any, alice: Any) -> None:
    client = login(admin_user)
    own = Membership.objects.get(project=batch.project, user=admin_user)
    alice_membership = Membership.objects.get(project=batch.project, user=alice)
    refusals = [
        client.post(f"/projects/demo/members/{own.pk}/remove/", **HTMX),
        client.post(f"/projects/demo/members/{alice_membership.pk}/role/", {"role": "auditor"}, **HTMX),
        client.post(f"/projects/demo/members/{alice_membership.pk}/set-password-link/", **HTMX),
        client.post("/projects/demo/members/", {"username": "nobody", "role": "annotator"}, **HTMX),
    ]
    messages = [error_of(response) for response in refusals[:3]] + [field_error_of(refusals[3], "username")]
    assert messages[0].startswith("adam is the last admin of Demo and cannot be removed")
    assert messages[1].startswith("alice still holds open assignments (batch-1 round 1)")
    assert messages[2] == "alice already has a password: they log in with it"
    assert messages[3].startswith("Username: no user is called 'nobody'")
    for message in messages:
        assert_own_words(message)


def test_batch_page_refusals_say_who_and_what(batch: Any, admin_user: Any, alice: Any, bob: Any) -> None:
    give_work(batch, alice)
    client = login(admin_user)
    assignment = batch.assignments.get(annotator=alice)
    asked = client.post(f"/projects/demo/assignments/{assignment.pk}/unassign/", **HTMX)
    assert asked.status_code == 409
    confirm = re.search(r'data-role="confirm">\s*<p class="error">(.*?)</p>', asked.content.decode(), re.S)
    assert confirm and html.unescape(confirm.group(1)).startswith("alice has 1 span and 1 sample marked done in")
    assert_own_words(html.unescape(confirm.group(1)))
    taken = client.post(f"/projects/demo/batches/{batch.pk}/annotators/", {"annotator": str(bob.pk)}, **HTMX)
    assert error_of(taken) == "bob is already assigned to batch-1 round 1"
    nobody = client.post(f"/projects/demo/batches/{batch.pk}/annotators/", {"annotator": "x"}, **HTMX)
    assert error_of(nobody) == "Annotator: choose one of the annotators of Demo"


def test_both_annotator_dropdowns_mark_users_without_a_password(batch: Any, admin_user: Any) -> None:
    invited = get_user_model().objects.create_user(username="ivy")  # no password: an invitation not yet used
    Membership.objects.create(project=batch.project, user=invited, role=Membership.Role.ANNOTATOR)
    page = login(admin_user).get(f"/projects/demo/batches/{batch.pk}/annotators/").content.decode()
    assign = re.search(r'<select name="annotator">(.*?)</select>', page, re.S)
    reassign = re.findall(r'<select name="to"[^>]*>(.*?)</select>', page, re.S)
    assert assign and reassign
    for options in [assign.group(1), *reassign]:
        assert f'<option value="{invited.pk}">ivy (no password yet)</option>' in options


def test_an_import_names_the_type_it_expected_and_what_it_found_in_plain_words() -> None:
    line = {"passage_id": "p1", "source": "One.", "summary": "A.", "generator": None, "metadata": {"x": 1}}
    rows = [line, [1, 2], {**line, "generator": "g", "summary": True}]
    content = "\n".join(json.dumps(row) for row in rows)
    with pytest.raises(ingest.ImportProblems) as failure:
        ingest.parse_samples_jsonl(content, "up.jsonl")
    assert failure.value.messages == [
        "up.jsonl: line 1: field 'generator' must be a string, found null",
        "up.jsonl: line 2: expected a JSON object, found a list of 2 items",
        "up.jsonl: line 3: field 'summary' must be a string, found true",
    ]


def test_the_import_page_shows_the_plain_words(project: Any, admin_user: Any) -> None:
    bad = json.dumps({"passage_id": "p1", "source": None, "summary": "A.", "generator": "g"}).encode()
    page = login(admin_user).post("/projects/demo/import/", {"files": [SimpleUploadedFile("up.jsonl", bad)]},
                                  follow=True)
    text = html.unescape(page.content.decode())
    assert "up.jsonl: line 1: field 'source' must be a string, found null" in text
    assert "NoneType" not in text
