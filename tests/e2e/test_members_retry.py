"""The members page in a real browser: the errors of a refused submission (above and beside the fields) go as soon as the next one is sent,
so a retry that fails otherwise (or is slow) is never shown under the old message."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, Route, expect

from annotate.models import Project

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_taken_username_error_is_cleared_when_the_form_is_sent_again(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project
) -> None:
    log_in(page, admin_user)
    page.goto(live_server.url + reverse("project-members", args=[project.slug]))
    form = page.locator("[data-role='create-member']")
    form.locator("input[name=username]").fill("alice")
    form.locator("button").click()
    expect(page.locator("#members [data-role='error']")).to_have_text(
        "Nobody was created: see the message beside the field.")
    beside = form.locator("[data-error-for=username]")
    expect(beside).to_have_text("Username: 'alice' is already a member of this project, as annotator")

    # The retry never gets an answer: what stays on screen must not be the first attempt's error.
    def no_answer(route: Route) -> None:
        route.abort()

    page.route("**/members/new/", no_answer)
    with page.expect_request(lambda request: request.url.endswith("/members/new/")):
        form = page.locator("[data-role='create-member']")
        form.locator("input[name=username]").fill("pat")
        form.locator("button").click()
    expect(page.locator("#members [data-role='error']")).to_have_count(0)
    expect(page.locator("#members [data-error-for]")).to_have_count(0)
