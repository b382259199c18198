"""A refused form's page: over plain HTTP with Secure cookies (DEBUG off), it says no reload helps and names the
settings; every other refusal keeps the usual advice."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

PLAIN_HTTP = 'data-role="secure-cookie-over-http"'
RELOAD = "reload the page and try again"


def log_in_without_the_cookie(*, secure: bool) -> tuple[int, str]:
    """A login form sent the way a browser sends it when it kept no CSRF cookie: the token field, no cookie."""
    client = Client(enforce_csrf_checks=True)
    answer = client.post("/accounts/login/", {"username": "alice", "password": "x", "csrfmiddlewaretoken": "a" * 64},
                         secure=secure, HTTP_HOST="faithlab.test")
    return answer.status_code, answer.content.decode()


def test_secure_cookies_over_plain_http_say_that_reloading_will_not_help(settings: pytest.FixtureRequest) -> None:
    settings.CSRF_COOKIE_SECURE = True
    settings.ALLOWED_HOSTS = ["faithlab.test"]
    status, page = log_in_without_the_cookie(secure=False)
    assert status == 403
    assert PLAIN_HTTP in page and "http://faithlab.test" in page
    assert "CSRF_COOKIE_SECURE=false" in page and "SESSION_COOKIE_SECURE=false" in page
    assert "reloading will not help" in page and RELOAD not in page


@pytest.mark.parametrize(("cookie_secure", "secure"), [(True, True), (False, False)],
                         ids=["https-without-cookie", "insecure-cookie-setting"])
def test_other_refusals_keep_the_usual_advice(settings: pytest.FixtureRequest, cookie_secure: bool,
                                              secure: bool) -> None:
    settings.CSRF_COOKIE_SECURE = cookie_secure
    settings.ALLOWED_HOSTS = ["faithlab.test"]
    status, page = log_in_without_the_cookie(secure=secure)
    assert status == 403
    assert PLAIN_HTTP not in page and RELOAD in page
    assert "The form was sent without a valid security token" in page
