"""HTML answers vary on HX-Request (a cache must not hand an htmx fragment back as the page); JSON does not."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from django.utils.cache import has_vary_header

from annotate.models import Batch
from tests.conftest import login


def test_a_page_and_its_fragment_both_say_they_vary_on_hx_request(batch: Batch, admin_user: Any) -> None:
    client = login(admin_user)
    url = reverse("batch-samples", args=[batch.project.slug, batch.pk])
    page = client.get(url)
    fragment = client.get(url, HTTP_HX_REQUEST="true")
    assert page.status_code == fragment.status_code == 200
    # The two answers really differ: the fragment has no page around it.
    assert b"<html" in page.content and b"<html" not in fragment.content
    assert has_vary_header(page, "HX-Request") and has_vary_header(fragment, "HX-Request")
    # Django's own Vary entries are kept beside it.
    assert has_vary_header(page, "Cookie")


def test_error_pages_vary_too_and_json_is_left_alone(batch: Batch, admin_user: Any) -> None:
    client = login(admin_user)
    missing = client.get("/projects/no-such-project/")
    assert missing.status_code == 404 and has_vary_header(missing, "HX-Request")
    api = client.get(f"/api/projects/{batch.project.slug}/")
    assert api.status_code == 200 and api["Content-Type"].startswith("application/json")
    assert not has_vary_header(api, "HX-Request")
