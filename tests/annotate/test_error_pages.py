"""403, 404 and 500 pages in the app's layout, saying why, with a way back (as in production: DEBUG off)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import path

import config.urls
from annotate.models import Project


def broken_view(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("database password is hunter2")  # must never reach the page


# The app's own addresses plus one that fails, for the 500 page (used with pytest.mark.urls).
urlpatterns = [path("broken-for-tests/", broken_view), *config.urls.urlpatterns]


@pytest.fixture(autouse=True)
def production_mode(settings: Any) -> None:
    settings.DEBUG = False


def assert_in_layout(html: str) -> None:
    assert '<header class="topbar">' in html
    assert '<a class="brand" href="/">FaithLab</a>' in html
    assert 'onclick="history.back()">Go back</button>' in html
    assert '<a href="/">Your home page</a>' in html


def test_a_forbidden_page_says_who_may_do_it(project: Project, alice: Any, client_for: Callable[[Any], Client]) -> None:
    response = client_for(alice).post(f"/projects/{project.slug}/members/", {"username": "bob", "role": "admin"})
    assert response.status_code == 403
    html = response.content.decode()
    assert_in_layout(html)
    assert "<title>Not allowed · FaithLab</title>" in html
    assert '<p class="error" role="alert">Only the project&#x27;s admins may do this</p>' in html
    assert '<span class="who">alice</span>' in html  # rendered with the request: the user is shown


def test_only_staff_create_projects_is_the_reason_shown(alice: Any, client_for: Callable[[Any], Client]) -> None:
    response = client_for(alice).get("/projects/new/")
    assert response.status_code == 403
    assert '<p class="error" role="alert">Only site staff create projects</p>' in response.content.decode()
    assert not Project.objects.exists()


def test_a_project_the_user_is_not_in_is_not_found(project: Project, charlie: Any,
                                                    client_for: Callable[[Any], Client]) -> None:
    response = client_for(charlie).get(f"/projects/{project.slug}/")
    assert response.status_code == 404
    html = response.content.decode()
    assert_in_layout(html)
    assert "<title>Not found · FaithLab</title>" in html
    assert '<p class="error" role="alert">No such project</p>' in html


def test_an_unknown_address_is_named_on_the_not_found_page(alice: Any, client_for: Callable[[Any], Client]) -> None:
    response = client_for(alice).get("/no/such/page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert_in_layout(html)
    assert '<p class="error" role="alert">There is no page at /no/such/page/.</p>' in html
    assert "Resolver404" not in html


@pytest.mark.urls(__name__)
def test_a_server_error_renders_in_the_layout_without_the_error(alice: Any) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    response = client.get("/broken-for-tests/")
    assert response.status_code == 500
    html = response.content.decode()
    assert_in_layout(html)
    assert "<title>Server error · FaithLab</title>" in html
    assert "Something went wrong on our side, and what you asked for was not done." in html
    assert "hunter2" not in html and "RuntimeError" not in html


def test_a_form_without_its_csrf_token_says_so_in_the_layout(admin_user: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    response = client.post("/projects/new/", {"name": "Pilot"})
    assert response.status_code == 403
    html = response.content.decode()
    assert_in_layout(html)
    assert '<p class="error" role="alert">The form was sent without a valid security token, so nothing was saved.</p>' in html
    assert '<span class="who">adam</span>' in html
    assert not Project.objects.exists()
