"""A page's write after its login session changed (config/session_guard.py): refused with a reason, never misfiled."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client

from annotate.models import Assignment, SpanAnnotation
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db


def span_body(sample: Any) -> dict[str, Any]:
    return {"sample": sample.pk, "start": 0, "end": 4, "labels": ["Benign"]}


def test_a_write_from_a_page_opened_as_another_user_is_refused_and_names_both(sample: Any, alice: Any) -> None:
    # bob's page, but alice has logged in since in another tab: the cookie is hers now.
    client = login(alice)
    response = client.post("/api/spans/", span_body(sample), content_type="application/json",
                           headers={"X-FaithLab-User": "bob"})
    assert response.status_code == 403
    assert response["X-FaithLab-Session"] == "other_user"
    assert response.json()["code"] == "other_user"
    assert "opened as bob" in response.json()["detail"] and "logged in as alice" in response.json()["detail"]
    assert not SpanAnnotation.objects.exists()


def test_the_pages_own_user_works_as_before_and_a_read_for_another_is_refused(sample: Any, alice: Any) -> None:
    client = login(alice)
    created = client.post("/api/spans/", span_body(sample), content_type="application/json",
                          headers={"X-FaithLab-User": "alice"})
    assert created.status_code == 201, created.content
    read = client.get(f"/api/samples/{sample.pk}/spans/", headers={"X-FaithLab-User": "alice"})
    assert read.status_code == 200 and len(read.json()) == 1
    # bob's page asking for its data after alice logged in: refused, so it never shows (or serves) alice's work.
    other = client.get(f"/api/samples/{sample.pk}/spans/", headers={"X-FaithLab-User": "bob"})
    assert other.status_code == 403 and other.json()["code"] == "other_user"
    # A plain page load (no header) is the person's own navigation: it is served as the session's user.
    assert client.get(f"/projects/{sample.project.slug}/").status_code == 200
    # A script without the header (API token, curl) is not affected.
    assert client.post("/api/spans/", {**span_body(sample), "start": 5, "end": 9},
                       content_type="application/json").status_code == 201


def test_a_name_outside_ascii_is_sent_percent_encoded(sample: Any) -> None:
    zoe = make_user("zoë")
    sample.project.memberships.create(user=zoe, role="annotator")
    Assignment.objects.create(batch=sample.batch, annotator=zoe)
    client = login(zoe)
    response = client.post("/api/spans/", span_body(sample), content_type="application/json",
                           headers={"X-FaithLab-User": quote("zoë")})
    assert response.status_code == 201, response.content


def test_htmx_after_the_session_ended_gets_401_not_the_login_page(sample: Any) -> None:
    anonymous = Client()
    url = f"/projects/{sample.project.slug}/"
    plain = anonymous.get(url)
    assert plain.status_code == 302 and plain["Location"].startswith("/accounts/login/")
    htmx = anonymous.get(url, headers={"HX-Request": "true"})
    assert htmx.status_code == 401
    assert htmx["X-FaithLab-Session"] == "logged_out"
    assert "log in again" in htmx.content.decode().lower()
    assert "<form" not in htmx.content.decode()


def test_the_api_401_says_logged_out(sample: Any) -> None:
    response = Client().post("/api/spans/", span_body(sample), content_type="application/json")
    assert response.status_code == 401
    assert response["X-FaithLab-Session"] == "logged_out"
