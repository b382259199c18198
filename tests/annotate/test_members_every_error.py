"""The members page's forms show every problem at once, each beside its field, in the app's words; passwords are
checked with the project's own AUTH_PASSWORD_VALIDATORS (Django's standard four), here and on the set-password page."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from annotate.models import Membership
from annotate.services import members
from tests.annotate.member_helpers import HTMX
from tests.conftest import login

pytestmark = pytest.mark.django_db
User = get_user_model()

STANDARD_VALIDATORS = {
    "django.contrib.auth.password_validation.UserAttributeSimilarityValidator",
    "django.contrib.auth.password_validation.MinimumLengthValidator",
    "django.contrib.auth.password_validation.CommonPasswordValidator",
    "django.contrib.auth.password_validation.NumericPasswordValidator",
}


def errors_beside(response: Any, field: str) -> list[str]:
    """The messages shown beside one field of the answered page."""
    found = re.findall(rf'data-error-for="{field}">(.*?)</span>', response.content.decode(), re.S)
    return [html.unescape(message).strip() for message in found]


def summary_of(response: Any) -> str:
    found = re.search(r'data-role="error">(.*?)</p>', response.content.decode(), re.S)
    assert found, "the answer shows no error line"
    return html.unescape(found.group(1)).strip()


def test_the_standard_password_validators_are_on_in_every_setting() -> None:
    assert {validator["NAME"] for validator in settings.AUTH_PASSWORD_VALIDATORS} >= STANDARD_VALIDATORS


def test_a_bad_username_email_and_password_are_all_shown_beside_their_fields(project: Any, admin_user: Any) -> None:
    before = (User.objects.count(), Membership.objects.count())
    response = login(admin_user).post("/projects/demo/members/new/", {
        "username": "pat k", "email": "pat@", "role": "annotator", "access": "password", "password": "123",
    }, **HTMX)
    assert response.status_code == 400
    assert errors_beside(response, "username") == [
        "Username: use letters, digits and . @ + - _ only (spaces cannot be used)"]
    assert errors_beside(response, "email") == ["Email: 'pat@' is not an email address"]
    assert errors_beside(response, "password") == [
        "Password: use at least 8 characters (this one has 3)",
        "Password: this is one of the passwords people use most, which are guessed first; choose another",
        "Password: use letters or other characters too, not digits alone",
    ]
    assert summary_of(response) == "Nobody was created: see the 5 messages beside the fields."
    assert "This password" not in response.content.decode()  # never Django's English
    assert (User.objects.count(), Membership.objects.count()) == before


def test_a_password_like_the_username_is_refused_in_the_apps_words(project: Any, admin_user: Any) -> None:
    response = login(admin_user).post("/projects/demo/members/new/", {
        "username": "patricia-lindqvist", "email": "", "role": "annotator", "access": "password",
        "password": "patricia-lindqvist1",
    })
    assert response.status_code == 400
    assert errors_beside(response, "password") == [
        "Password: too close to the username; choose one that does not resemble it"]
    assert not User.objects.filter(username="patricia-lindqvist").exists()


def test_a_good_password_still_creates_the_user(project: Any, admin_user: Any) -> None:
    response = login(admin_user).post("/projects/demo/members/new/", {
        "username": "pat", "email": "", "role": "annotator", "access": "password", "password": "quiet-harbour-41",
    })
    assert response.status_code == 200
    assert Client().login(username="pat", password="quiet-harbour-41")


def test_the_set_password_page_refuses_a_weak_password_and_takes_a_good_one(project: Any) -> None:
    new = members.create_member(project, "erin", role="annotator")
    browser = Client()
    form_url = browser.get(new.set_password_path, follow=True).redirect_chain[-1][0]
    weak = browser.post(form_url, {"new_password1": "123", "new_password2": "123"})
    assert weak.status_code == 200 and "too short" in html.unescape(weak.content.decode())
    assert not User.objects.get(username="erin").has_usable_password()
    browser.post(form_url, {"new_password1": "quiet-harbour-41", "new_password2": "quiet-harbour-41"})
    assert Client().login(username="erin", password="quiet-harbour-41")


@pytest.mark.parametrize("typed", ["", "   "])
def test_adding_an_existing_user_with_no_username_asks_for_one(
    project: Any, admin_user: Any, typed: str
) -> None:
    before = Membership.objects.count()
    response = login(admin_user).post("/projects/demo/members/", {"username": typed, "role": "annotator"}, **HTMX)
    assert response.status_code == 400
    assert errors_beside(response, "username") == ["Type the username of the person to add."]
    assert "no user is called" not in response.content.decode()
    assert summary_of(response) == "Nobody was added: see the message beside the field."
    assert Membership.objects.count() == before
