"""With DEBUG on (``make run``'s default) a page's 404 is still the app's page in its layout, saying why.

Django answers every 404 in DEBUG with its technical page listing the site's URL patterns; config/not_found.py
puts the app's page (templates/404.html) in its place. APPEND_SLASH redirects and the API's JSON 404s stay as they
were, and ``DEBUG_TECHNICAL_404`` brings Django's page back for developers.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from annotate.models import Project
from tests.annotate.test_error_pages import assert_in_layout
from tests.test_settings_env import clean_env, run

# What only Django's technical 404 shows: the URL patterns it tried, and which view raised the 404.
TECHNICAL_URL_LIST = "Django tried these URL patterns"
TECHNICAL_RAISED_BY = "Raised by:"


@pytest.fixture(autouse=True)
def debug_mode(settings: Any) -> None:
    settings.DEBUG = True
    settings.DEBUG_TECHNICAL_404 = False


def assert_app_not_found_page(html: str, reason: str) -> None:
    assert_in_layout(html)
    assert "<title>Not found · FaithLab</title>" in html
    assert f'<p class="error" role="alert">{reason}</p>' in html
    assert TECHNICAL_URL_LIST not in html and TECHNICAL_RAISED_BY not in html
    assert "Resolver404" not in html and "config.urls" not in html


def test_an_outsider_gets_the_not_found_page_with_its_reason(project: Project, charlie: Any,
                                                              client_for: Callable[[Any], Client]) -> None:
    response = client_for(charlie).get(f"/projects/{project.slug}/")
    assert response.status_code == 404
    assert_app_not_found_page(response.content.decode(), "No such project")
    assert '<span class="who">charlie</span>' in response.content.decode()  # rendered with the request


def test_a_pairs_page_of_a_span_project_says_there_is_no_such_pairs_project(
    project: Project, admin_user: Any, client_for: Callable[[Any], Client]
) -> None:
    response = client_for(admin_user).get(f"/projects/{project.slug}/pairs/flags/")
    assert response.status_code == 404
    assert_app_not_found_page(response.content.decode(), "No such pairs project")


def test_an_address_no_page_serves_gets_the_generic_reason(alice: Any, client_for: Callable[[Any], Client]) -> None:
    for path in ("/no/such/page/", "/no/such/page"):  # without its slash too: nothing to redirect to
        response = client_for(alice).get(path)
        assert response.status_code == 404, path
        assert_app_not_found_page(response.content.decode(), f"There is no page at {path}.")


def test_an_address_without_its_final_slash_is_still_redirected(project: Project, alice: Any,
                                                                 client_for: Callable[[Any], Client]) -> None:
    response = client_for(alice).get(f"/projects/{project.slug}?tab=batches")
    assert response.status_code == 301
    assert response["Location"] == f"/projects/{project.slug}/?tab=batches"


def test_an_unknown_api_address_is_still_its_json_404(admin_user: Any, client_for: Callable[[Any], Client]) -> None:
    response = client_for(admin_user).get("/api/nope/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json()["detail"].startswith("No API endpoint at /api/nope/")


def test_the_setting_brings_back_djangos_technical_page(project: Project, charlie: Any, settings: Any,
                                                        client_for: Callable[[Any], Client]) -> None:
    settings.DEBUG_TECHNICAL_404 = True
    client = client_for(charlie)

    unknown = client.get("/no/such/page/")
    assert unknown.status_code == 404
    assert TECHNICAL_URL_LIST in unknown.content.decode()
    assert '<header class="topbar">' not in unknown.content.decode()

    raised = client.get(f"/projects/{project.slug}/")
    assert raised.status_code == 404
    assert TECHNICAL_RAISED_BY in raised.content.decode() and "No such project" in raised.content.decode()
    assert '<header class="topbar">' not in raised.content.decode()


def test_without_debug_the_middleware_changes_nothing(project: Project, charlie: Any, settings: Any,
                                                      client_for: Callable[[Any], Client]) -> None:
    """The same page as in DEBUG, from Django's own handler404 (the middleware steps aside), even with the setting."""
    settings.DEBUG = False
    settings.DEBUG_TECHNICAL_404 = True
    response = client_for(charlie).get(f"/projects/{project.slug}/")
    assert response.status_code == 404
    assert_app_not_found_page(response.content.decode(), "No such project")


@pytest.mark.parametrize(("value", "expected"), [("", "False"), ("true", "True"), ("0", "False")])
def test_the_setting_is_read_from_the_environment(tmp_path: Path, value: str, expected: str) -> None:
    env = clean_env(tmp_path, DEBUG_TECHNICAL_404=value, DJANGO_SETTINGS_MODULE="config.settings")
    seen = run([sys.executable, "-c", "from django.conf import settings; print(settings.DEBUG_TECHNICAL_404)"], env)
    assert seen.returncode == 0, seen.stderr
    assert seen.stdout.strip() == expected


def test_a_bad_value_stops_manage_py_naming_the_setting(tmp_path: Path) -> None:
    seen = run([sys.executable, "manage.py", "check"], clean_env(tmp_path, DEBUG_TECHNICAL_404="maybe"))
    assert seen.returncode != 0
    assert "DEBUG_TECHNICAL_404='maybe' is not a boolean; use true or false" in seen.stderr
    assert "Traceback" not in seen.stderr
