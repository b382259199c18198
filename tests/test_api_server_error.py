"""A server error under /api/ answers JSON, as the API's other errors do; a page's keeps the app's page (DEBUG off)."""

from __future__ import annotations

from typing import Any

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import path

import config.urls


def broken_view(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("database password is hunter2")  # must never reach the answer


# The app's own addresses plus two that fail (used with pytest.mark.urls), and the app's handler500.
urlpatterns = [
    path("api/broken-for-tests/", broken_view),
    path("broken-for-tests/", broken_view),
    *config.urls.urlpatterns,
]
handler500 = config.urls.handler500

pytestmark = [pytest.mark.urls(__name__), pytest.mark.django_db]


@pytest.fixture(autouse=True)
def production_mode(settings: Any) -> None:
    settings.DEBUG = False


def test_a_server_error_under_api_answers_json_with_a_detail(alice: Any) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    response = client.get("/api/broken-for-tests/", HTTP_ACCEPT="application/json")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"detail"}
    assert body["detail"].startswith("Server error: ")
    assert "hunter2" not in response.content.decode() and "RuntimeError" not in response.content.decode()


def test_a_server_error_on_a_page_keeps_the_html_page(alice: Any) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    response = client.get("/broken-for-tests/")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("text/html")
    assert "<title>Server error · FaithLab</title>" in response.content.decode()
