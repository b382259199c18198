"""The round wizard in a real browser: a value the server refuses (-5 items) shows its message beside the field
and takes the old preview away; fixing it brings the preview back and the message goes.

Before, the browser's own min="1" check stopped htmx from asking at all: the preview stayed on "size asked for
(100)" and nothing said why.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Project
from tests.pairs import conftest as pairs_fixtures
from tests.pairs.conftest import make_pair_items

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

pairs_project = pairs_fixtures.pairs_project


def test_a_refused_size_is_shown_beside_the_field_and_the_preview_is_cleared(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, pairs_project: Project
) -> None:
    make_pair_items(pairs_project, 12, round_number=None)
    log_in(page, admin_user)
    page.goto(live_server.url + reverse("pairs-round-new", args=[pairs_project.slug]))
    selected = page.locator("[data-role='funnel'] tr[data-step='selected'] [data-role='count']")
    expect(selected).to_have_text("12")
    message = page.locator("#round-error-size")
    expect(message).to_be_hidden()

    with page.expect_response(lambda response: "/rounds/new/?" in response.url):
        page.fill("input[name=size]", "-5")
    expect(message).to_be_visible()
    expect(message).to_have_text("-5 is below 1")
    expect(page.locator("[data-role='funnel']")).to_have_count(0)
    expect(page.locator("[data-role='form-errors']")).to_contain_text("Items to draw: -5 is below 1")

    with page.expect_response(lambda response: "/rounds/new/?" in response.url):
        page.fill("input[name=size]", "3")
    expect(selected).to_have_text("3")
    expect(message).to_be_hidden()
