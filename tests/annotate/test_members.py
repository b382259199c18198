"""The members page: users made without the Django admin, roles, adding and removing members, and who may
use the members and batch annotators pages. Assigning work on a batch's page is in test_assignments.py."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings

from annotate.models import Assignment, Membership, Project, SampleReview
from annotate.services import members
from tests.annotate.member_helpers import HTMX, give_work, submit_batch
from tests.conftest import PASSWORD, login, make_user

pytestmark = pytest.mark.django_db
User = get_user_model()


def invitation_url(response: Any) -> str:
    found = re.search(r'value="([^"]+)" data-role="invitation-url"', response.content.decode())
    assert found, response.content.decode()
    return html.unescape(found.group(1))


def new_user_form(**fields: str) -> dict[str, str]:
    return {"username": "erin", "email": "", "role": "annotator", "access": "invite", **fields}


def membership(project: Project, user: Any) -> Membership:
    return Membership.objects.get(project=project, user=user)


# --------------------------------------------------------------------------- who may do what


def action_urls(project: Project, batch: Any) -> list[tuple[str, str]]:
    alice_membership = membership(project, batch.assignments.get(annotator__username="alice").annotator)
    assignment = batch.assignments.get(annotator__username="alice").pk
    return [
        ("get", "/projects/demo/members/"),
        ("post", "/projects/demo/members/"),
        ("post", "/projects/demo/members/new/"),
        ("post", f"/projects/demo/members/{alice_membership.pk}/role/"),
        ("post", f"/projects/demo/members/{alice_membership.pk}/remove/"),
        ("post", f"/projects/demo/members/{alice_membership.pk}/set-password-link/"),
        ("get", f"/projects/demo/batches/{batch.pk}/annotators/"),
        ("post", f"/projects/demo/batches/{batch.pk}/annotators/"),
        ("post", f"/projects/demo/assignments/{assignment}/unassign/"),
        ("post", f"/projects/demo/assignments/{assignment}/reassign/"),
    ]


def test_outsiders_get_404_annotators_403_and_anonymous_the_login(batch: Any, alice: Any, charlie: Any) -> None:
    project = batch.project
    before = (User.objects.count(), Membership.objects.count(), Assignment.objects.count())
    form = {"username": "zed", "role": "admin", "annotator": str(charlie.pk), "to": str(charlie.pk), "confirm": "yes"}
    for method, url in action_urls(project, batch):
        assert getattr(login(charlie), method)(url, form).status_code == 404, url
        assert getattr(login(alice), method)(url, form).status_code == 403, url
        anonymous = getattr(Client(), method)(url, form)
        assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/"), url
    assert (User.objects.count(), Membership.objects.count(), Assignment.objects.count()) == before
    assert membership(project, alice).role == "annotator"


def test_wrong_methods_get_405(batch: Any, admin_user: Any) -> None:
    client = login(admin_user)
    for method, url in action_urls(batch.project, batch):
        wrong = "put" if method == "get" else "get"
        if url.endswith(("/members/", "/annotators/")):
            wrong = "put"  # these answer GET (the page) and POST (the form)
        assert getattr(client, wrong)(url).status_code == 405, (wrong, url)


def test_members_of_another_project_are_404(batch: Any, admin_user: Any, charlie: Any) -> None:
    other = Project.objects.create(name="Other", slug="other")
    foreign = Membership.objects.create(project=other, user=charlie, role="annotator")
    client = login(admin_user)
    assert client.post(f"/projects/demo/members/{foreign.pk}/remove/").status_code == 404
    assert client.post(f"/projects/demo/members/{foreign.pk}/role/", {"role": "admin"}).status_code == 404
    assert Membership.objects.get(pk=foreign.pk).role == "annotator"


# --------------------------------------------------------------------------- the members page


def test_members_page_lists_members_and_offers_every_role_curator_included(batch: Any, admin_user: Any) -> None:
    response = login(admin_user).get("/projects/demo/members/")
    assert response.status_code == 200
    page = response.content.decode()
    for name in ("adam", "alice", "bob"):
        assert f'data-member="{name}"' in page
    for role in ("admin", "annotator", "auditor", "curator"):
        assert f'<option value="{role}"' in page
    assert f'href="/projects/demo/batches/{batch.pk}/annotators/">batch-1</a> r1' in page


def test_members_page_htmx_variant_is_the_fragment(project: Any, admin_user: Any) -> None:
    page = login(admin_user).get("/projects/demo/members/", **HTMX).content.decode()
    assert page.startswith('\n<section id="members"') or page.lstrip().startswith('<section id="members"')
    assert "<html" not in page


def test_project_page_links_the_members_page_and_the_batch_page(batch: Any, admin_user: Any, alice: Any) -> None:
    page = login(admin_user).get("/projects/demo/").content.decode()
    assert 'href="/projects/demo/members/" data-role="members-link"' in page
    assert f'href="/projects/demo/batches/{batch.pk}/annotators/" data-role="batch-annotators"' in page
    annotator_page = login(alice).get("/projects/demo/").content.decode()
    assert "members-link" not in annotator_page and "batch-annotators" not in annotator_page


# --------------------------------------------------------------------------- creating users


def test_admin_creates_a_user_with_a_password(project: Any, admin_user: Any) -> None:
    response = login(admin_user).post(
        "/projects/demo/members/new/",
        new_user_form(email="erin@example.org", role="curator", access="password", password="erin-secret-1"),
    )
    assert response.status_code == 200
    assert "erin was created as curator" in response.content.decode()
    erin = User.objects.get(username="erin")
    assert erin.email == "erin@example.org" and erin.check_password("erin-secret-1")
    assert not erin.is_staff and not erin.is_superuser
    assert membership(project, erin).role == "curator"
    assert Client().login(username="erin", password="erin-secret-1")
    assert 'data-role="invitation"' not in response.content.decode()


def test_invitation_link_lets_the_new_user_choose_a_password_once(project: Any, admin_user: Any) -> None:
    response = login(admin_user).post("/projects/demo/members/new/", new_user_form())
    assert response.status_code == 200
    erin = User.objects.get(username="erin")
    assert not erin.has_usable_password()
    assert membership(project, erin).role == "annotator"
    url = invitation_url(response)
    assert url.startswith("http://testserver/accounts/reset/")

    browser = Client()
    landing = browser.get(url, follow=True)  # Django moves the token into the session, then shows the form
    assert landing.status_code == 200
    page = landing.content.decode()
    assert "Choose a password" in page and "<strong>erin</strong>" in page and 'name="new_password1"' in page
    form_url = landing.redirect_chain[-1][0]
    mismatch = browser.post(form_url, {"new_password1": "erin-pass-42", "new_password2": "erin-pass-43"})
    assert mismatch.status_code == 200 and "didn’t match" in html.unescape(mismatch.content.decode())
    done = browser.post(form_url, {"new_password1": "erin-pass-42", "new_password2": "erin-pass-42"}, follow=True)
    assert "Password set" in done.content.decode() and 'href="/accounts/login/"' in done.content.decode()
    erin.refresh_from_db()
    assert erin.check_password("erin-pass-42")

    again = Client().get(url, follow=True).content.decode()
    assert "This link does not work" in again and 'name="new_password1"' not in again


def test_project_admin_who_is_not_site_staff_may_create_users(project: Any) -> None:
    pat = make_user("pat")
    Membership.objects.create(project=project, user=pat, role="admin")
    response = login(pat).post("/projects/demo/members/new/", new_user_form(username="erin"))
    assert response.status_code == 200
    assert not User.objects.get(username="erin").is_staff


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"username": ""}, "Username: type a username"),
        ({"username": "   "}, "Username: type a username"),
        ({"username": "erin smith"}, "Username: use letters, digits and . @ + - _ only (spaces cannot be used)"),
        ({"username": "erin!"}, "Username: use letters, digits and . @ + - _ only ('!' cannot be used)"),
        ({"username": "e" * 151}, "Username: at most 150 characters (this one has 151)"),
        ({"username": "ALICE"}, "Username: 'alice' is already a member of this project, as annotator (usernames are "
                                "compared ignoring case, so 'ALICE' is that name)"),
        ({"role": "boss"}, "Role: 'boss' is not a role here; choose admin, annotator, auditor or curator"),
        ({"email": "erin@"}, "Email: 'erin@' is not an email address"),
        ({"access": "password", "password": ""}, "Password: type a password, or invite the user to choose one"),
        ({"access": "magic"}, "Choose how they get in: \"Invite\" or \"Set a password\""),
    ],
)
def test_bad_new_user_input_names_the_field_and_creates_nothing(
    project: Any, admin_user: Any, fields: dict[str, str], message: str
) -> None:
    before = (User.objects.count(), Membership.objects.count())
    response = login(admin_user).post("/projects/demo/members/new/", new_user_form(**fields))
    assert response.status_code == 400
    assert message in html.unescape(response.content.decode())
    assert (User.objects.count(), Membership.objects.count()) == before


@override_settings(
    AUTH_PASSWORD_VALIDATORS=[{"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"}]
)
def test_a_password_the_validators_refuse_creates_nothing(project: Any, admin_user: Any) -> None:
    response = login(admin_user).post(
        "/projects/demo/members/new/", new_user_form(access="password", password="short")
    )
    assert response.status_code == 400
    assert "Password: use at least 8 characters (this one has 5)" in html.unescape(
        response.content.decode()
    )
    assert not User.objects.filter(username="erin").exists()


def test_a_failed_form_keeps_what_was_typed_but_never_the_password(project: Any, admin_user: Any) -> None:
    response = login(admin_user).post(
        "/projects/demo/members/new/",
        new_user_form(username="bad name", email="e@example.org", role="auditor", access="password",
                      password="typed-secret"),
    )
    page = response.content.decode()
    assert 'value="bad name"' in page and 'value="e@example.org"' in page
    assert "typed-secret" not in page


def test_create_user_htmx_variant_answers_the_fragment_with_the_link(project: Any, admin_user: Any) -> None:
    response = login(admin_user).post("/projects/demo/members/new/", new_user_form(), **HTMX)
    page = response.content.decode()
    assert response.status_code == 200 and "<html" not in page and 'id="members"' in page
    assert invitation_url(response).startswith("http://testserver/accounts/reset/")
    failed = login(admin_user).post("/projects/demo/members/new/", new_user_form(), **HTMX)  # erin exists now
    assert failed.status_code == 400 and "<html" not in failed.content.decode()
    assert "Username: &#x27;erin&#x27; is already a member of this project, as annotator" in failed.content.decode()


def test_new_set_password_link_only_for_members_without_one_in_this_project_alone(
    project: Any, admin_user: Any, alice: Any
) -> None:
    client = login(admin_user)
    erin = members.create_member(project, "erin", role="annotator").membership
    response = client.post(f"/projects/demo/members/{erin.pk}/set-password-link/")
    assert response.status_code == 200 and "/accounts/reset/" in invitation_url(response)

    has_password = client.post(f"/projects/demo/members/{membership(project, alice).pk}/set-password-link/")
    assert has_password.status_code == 400 and "alice already has a password: they log in with it" in has_password.content.decode()

    other = Project.objects.create(name="Other", slug="other")
    Membership.objects.create(project=other, user=erin.user, role="annotator")
    shared = client.post(f"/projects/demo/members/{erin.pk}/set-password-link/")
    assert shared.status_code == 400
    assert "erin belongs to other projects too; a site admin sets their password" in shared.content.decode()
    assert 'data-role="invitation"' not in shared.content.decode()


# --------------------------------------------------------------------------- adding, changing, removing members


def test_admin_adds_an_existing_user_as_curator(project: Any, admin_user: Any, charlie: Any) -> None:
    response = login(admin_user).post("/projects/demo/members/", {"username": "charlie", "role": "curator"})
    assert response.status_code == 200 and "charlie is curator of Demo." in response.content.decode()
    assert membership(project, charlie).role == "curator"


def test_adding_an_unknown_user_or_a_bad_role_changes_nothing(project: Any, admin_user: Any, charlie: Any) -> None:
    client = login(admin_user)
    response = client.post("/projects/demo/members/", {"username": "nobody", "role": "annotator"})
    assert response.status_code == 400
    assert ("Username: no user is called &#x27;nobody&#x27;; create them under &quot;Create a user&quot; below"
            in response.content.decode())
    response = client.post("/projects/demo/members/", {"username": "charlie", "role": "owner"}, **HTMX)
    assert response.status_code == 400 and "<html" not in response.content.decode()
    assert "Role: &#x27;owner&#x27; is not a role here" in response.content.decode()
    assert not Membership.objects.filter(user=charlie).exists()


def test_admin_changes_a_role(project: Any, admin_user: Any, alice: Any) -> None:
    alice_membership = membership(project, alice)
    response = login(admin_user).post(f"/projects/demo/members/{alice_membership.pk}/role/", {"role": "curator"},
                                      **HTMX)
    assert response.status_code == 200 and "alice is now curator." in response.content.decode()
    assert "<html" not in response.content.decode()
    assert membership(project, alice).role == "curator"


def test_a_bad_role_is_refused(project: Any, admin_user: Any, alice: Any) -> None:
    response = login(admin_user).post(f"/projects/demo/members/{membership(project, alice).pk}/role/",
                                      {"role": "root"})
    assert response.status_code == 400 and "Role: &#x27;root&#x27; is not a role here" in response.content.decode()
    assert membership(project, alice).role == "annotator"


def test_the_last_admin_can_be_neither_demoted_nor_removed(project: Any, admin_user: Any, charlie: Any) -> None:
    client = login(admin_user)
    own = membership(project, admin_user)
    demoted = client.post(f"/projects/demo/members/{own.pk}/role/", {"role": "annotator"})
    assert demoted.status_code == 400
    assert ("adam is the last admin of Demo and cannot be given another role; make someone else admin first"
            in demoted.content.decode())
    removed = client.post(f"/projects/demo/members/{own.pk}/remove/")
    assert removed.status_code == 400 and "adam is the last admin of Demo and cannot be removed" in removed.content.decode()
    via_add_form = client.post("/projects/demo/members/", {"username": "adam", "role": "auditor"})
    assert via_add_form.status_code == 400
    assert membership(project, admin_user).role == "admin"

    Membership.objects.create(project=project, user=charlie, role="admin")
    assert client.post(f"/projects/demo/members/{own.pk}/role/", {"role": "auditor"}).status_code == 200
    assert membership(project, admin_user).role == "auditor"


def test_an_annotator_with_open_assignments_keeps_the_role_until_they_are_handed_on(
    batch: Any, admin_user: Any, alice: Any
) -> None:
    response = login(admin_user).post(f"/projects/demo/members/{membership(batch.project, alice).pk}/role/",
                                      {"role": "auditor"})
    assert response.status_code == 400
    assert ("alice still holds open assignments (batch-1 round 1), so they stay an annotator; unassign or reassign "
            "them on the batch&#x27;s page first" in response.content.decode())
    assert membership(batch.project, alice).role == "annotator"


def test_removing_a_member_drops_their_unworked_assignments(batch: Any, admin_user: Any, alice: Any) -> None:
    response = login(admin_user).post(f"/projects/demo/members/{membership(batch.project, alice).pk}/remove/",
                                      **HTMX)
    assert response.status_code == 200 and "<html" not in response.content.decode()
    assert "alice is no longer a member. Their 1 unstarted assignment went with them." in response.content.decode()
    assert not Membership.objects.filter(user=alice).exists()
    assert not Assignment.objects.filter(annotator=alice).exists()
    assert Assignment.objects.filter(annotator__username="bob").exists()


def test_removing_a_member_with_work_in_an_open_assignment_is_refused(batch: Any, admin_user: Any, alice: Any) -> None:
    give_work(batch, alice)
    response = login(admin_user).post(f"/projects/demo/members/{membership(batch.project, alice).pk}/remove/")
    assert response.status_code == 400
    assert ("alice has work in open assignments (batch-1 round 1); unassign or reassign them on the "
            "batch&#x27;s page first") in response.content.decode()
    assert Membership.objects.filter(user=alice).exists() and Assignment.objects.filter(annotator=alice).exists()


def test_a_member_who_submitted_can_be_removed_and_the_work_keeps_counting(
    batch: Any, admin_user: Any, alice: Any
) -> None:
    submit_batch(batch, alice)
    assert Assignment.objects.get(annotator=alice).status == "submitted"
    response = login(admin_user).post(f"/projects/demo/members/{membership(batch.project, alice).pk}/remove/")
    assert response.status_code == 200
    assert not Membership.objects.filter(user=alice).exists()
    assert Assignment.objects.get(annotator=alice).status == "submitted"
    assert SampleReview.objects.filter(annotator=alice, done=True).count() == batch.samples.count()


def test_page_forms_need_the_csrf_token(batch: Any, admin_user: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    assignment = batch.assignments.first()
    assert client.post("/projects/demo/members/new/", new_user_form()).status_code == 403
    assert client.post(f"/projects/demo/assignments/{assignment.pk}/unassign/").status_code == 403
    assert not User.objects.filter(username="erin").exists()
    assert Assignment.objects.filter(pk=assignment.pk).exists()


def test_invited_user_logs_in_after_setting_the_password(project: Any) -> None:
    new = members.create_member(project, "erin", role="annotator")
    assert not Client().login(username="erin", password=PASSWORD)
    browser = Client()
    form_url = browser.get(new.set_password_path, follow=True).redirect_chain[-1][0]
    browser.post(form_url, {"new_password1": PASSWORD, "new_password2": PASSWORD})
    assert Client().login(username="erin", password=PASSWORD)
