"""Under /api/ every 404 is JSON ``{"detail": ...}``, naming what was not found, with DEBUG on or off.

Addresses no endpoint serves used to get Django's HTML 404, and with DEBUG on
its technical page listing every URL pattern of the site.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from annotate.models import Project
from tests.conftest import login

pytestmark = pytest.mark.django_db

CASES = {
    "/api/nope/": "No API endpoint at /api/nope/: the endpoints and their paths are listed in the schema at /api/schema/",
    "/api/spans/abc/": "No span 'abc' (span ids are whole numbers); nothing at /api/spans/abc/",
    "/api/samples/1.5/spans/": "No sample '1.5' (sample ids are whole numbers); nothing at /api/samples/1.5/spans/",
    "/api/projects/café/": "No project 'café' (slugs are ASCII letters, digits, - and _); nothing at /api/projects/café/",
    "/api/projects/café/export/": (
        "No project 'café' (slugs are ASCII letters, digits, - and _); nothing at /api/projects/café/export/"
    ),
    "/api/projects/demo/nope/": (
        "No API endpoint at /api/projects/demo/nope/: the endpoints and their paths are listed in the schema at "
        "/api/schema/"
    ),
}


@pytest.mark.parametrize("debug", [False, True], ids=["production", "debug"])
@pytest.mark.parametrize("path", list(CASES))
def test_an_unknown_api_address_is_a_json_404_naming_it(
    path: str, debug: bool, project: Project, admin_user: Any, settings: Any
) -> None:
    settings.DEBUG = debug
    response = login(admin_user).get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": CASES[path]}


@pytest.mark.parametrize("debug", [False, True], ids=["production", "debug"])
def test_every_method_of_a_signed_in_caller_gets_the_same_json_404(settings: Any, debug: bool, alice: Any) -> None:
    """A session's write without its CSRF token too: nothing is changed. (Anonymous callers get 401:
    tests/annotate/test_api_anonymous_and_unknown_fields.py.)"""
    settings.DEBUG = debug
    session = Client(enforce_csrf_checks=True)
    session.force_login(alice)
    for method in ("get", "post", "put", "patch", "delete"):
        response = getattr(session, method)("/api/nope/")
        assert response.status_code == 404, (method, response.content[:200])
        assert response.json()["detail"].startswith("No API endpoint at /api/nope/"), method


def test_an_address_without_its_final_slash_is_sent_to_the_slashed_one_like_the_real_endpoints(alice: Any) -> None:
    client = login(alice)
    assert client.get("/api/projects")["Location"] == "/api/projects/"
    # An address no endpoint serves, with or without the slash, is a 404 at once (no redirect to another 404).
    nowhere = client.get("/api/nope")
    assert nowhere.status_code == 404 and nowhere.json()["detail"].startswith("No API endpoint at /api/nope")


def test_the_api_s_own_404s_and_the_pages_404s_are_unchanged(project: Project, alice: Any, settings: Any) -> None:
    settings.DEBUG = False
    client = login(alice)
    assert client.get("/api/projects/nope/").json() == {"detail": "No Project matches the given query."}
    assert client.get("/api/spans/999999/").status_code == 404
    page = client.get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")


@pytest.mark.django_db
def test_an_endpoint_without_its_final_slash_is_redirected_for_get_and_named_for_post(admin_user: Any) -> None:
    """A POST cannot follow a redirect with its body (Django answered it with a 500 in DEBUG): a JSON 404 says
    where to send it; a GET is redirected as APPEND_SLASH does for every page."""
    client = Client()
    client.force_login(admin_user)
    answer = client.post("/api/projects", {}, content_type="application/json")
    assert answer.status_code == 404
    assert answer.json() == {"detail": "API addresses end with a slash: send this to /api/projects/"}
    moved = client.get("/api/projects?limit=5")
    assert moved.status_code == 301 and moved["Location"] == "/api/projects/?limit=5"
    nowhere = client.post("/api/nope", {}, content_type="application/json")
    assert nowhere.status_code == 404 and "No API endpoint at /api/nope" in nowhere.json()["detail"]
