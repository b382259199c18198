"""Passwords are stored with Argon2; ones stored earlier with PBKDF2 still log in and are re-hashed at that login.

The suite's autouse fixture swaps in MD5 for speed, so these tests put the project's own list back first.
"""
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher, identify_hasher, make_password

import config.settings as project_settings

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-passphrase-for-hashing"


@pytest.fixture
def project_hashers(settings: Any) -> None:
    settings.PASSWORD_HASHERS = list(project_settings.PASSWORD_HASHERS)


def test_new_passwords_are_stored_with_argon2(project_hashers: None) -> None:
    encoded = make_password(PASSWORD)
    assert identify_hasher(encoded).algorithm == "argon2"
    assert encoded.startswith("argon2$argon2id$")


def test_a_pbkdf2_password_still_logs_in_and_is_upgraded_to_argon2(project_hashers: None, client: Any) -> None:
    # Few iterations keep the test quick; what matters is the algorithm stored before the project chose Argon2.
    old = PBKDF2PasswordHasher().encode(PASSWORD, "oldsalt1234", iterations=1000)
    user = get_user_model().objects.create(username="olduser", password=old)
    assert client.post("/accounts/login/", {"username": "olduser", "password": PASSWORD}).status_code == 302
    user.refresh_from_db()
    assert identify_hasher(user.password).algorithm == "argon2"
    assert client.login(username="olduser", password=PASSWORD)


def test_a_wrong_password_is_refused_and_the_stored_hash_is_kept(project_hashers: None, client: Any) -> None:
    old = PBKDF2PasswordHasher().encode(PASSWORD, "oldsalt1234", iterations=1000)
    user = get_user_model().objects.create(username="olduser", password=old)
    response = client.post("/accounts/login/", {"username": "olduser", "password": "not-the-password"})
    assert response.status_code == 200
    user.refresh_from_db()
    assert user.password == old
