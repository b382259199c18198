"""A campaign run from the pages alone: the admin invites erin, erin chooses a password, gets a batch and annotates."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Browser, Page, expect

from annotate.models import Assignment, Membership, SpanAnnotation
from tests.conftest import PASSWORD
from tests.e2e.annotation_helpers import eventually, select_words

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_admin_invites_a_new_annotator_who_sets_a_password_and_annotates(
    browser: Browser, page: Page, live_server: Any, log_in: Any, admin_user: Any, batch: Any
) -> None:
    visited: list[str] = []
    page.on("request", lambda request: visited.append(request.url))
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)

    # The admin creates erin by invitation on the members page, reached from the project page.
    log_in(page, admin_user)
    page.goto(f"{live_server.url}/projects/demo/")
    page.click('[data-role="members-link"]')
    create = page.locator('[data-role="create-member"]')
    create.locator('input[name="username"]').fill("erin")
    create.locator('select[name="role"]').select_option("annotator")
    create.locator('input[name="access"][value="invite"]').check()
    create.locator("button").click()
    link_field = page.locator('[data-role="invitation-url"]')
    expect(link_field).to_be_visible()
    link = link_field.input_value()
    assert link.startswith(f"{live_server.url}/accounts/reset/")
    expect(page.locator('tr[data-member="erin"]')).to_contain_text("no password yet")
    page.locator('[data-role="invitation"] [data-copy]').click()
    expect(page.locator('[data-role="invitation"] [data-copy]')).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == link

    # erin opens the link in her own browser and chooses a password.
    erin_context = browser.new_context()
    erin_context.set_default_timeout(15_000)
    erin_page = erin_context.new_page()
    erin_page.goto(link)
    expect(erin_page.locator("h1")).to_have_text("Choose a password")
    erin_page.fill('input[name="new_password1"]', PASSWORD)
    erin_page.fill('input[name="new_password2"]', PASSWORD)
    erin_page.click("button[type=submit]")
    expect(erin_page.locator("h1")).to_have_text("Password set")
    erin = get_user_model().objects.get(username="erin")
    assert erin.check_password(PASSWORD)
    assert Membership.objects.get(user=erin).role == "annotator"

    # The admin gives erin the batch on its annotators page.
    page.goto(f"{live_server.url}/projects/demo/")
    page.click(f'tr[data-batch="{batch.pk}"] [data-role="batch-annotators"]')
    assign = page.locator('[data-role="assign"]')
    assign.locator('select[name="annotator"]').select_option(label="erin")
    assign.locator("button").click()
    expect(page.locator('tr[data-annotator="erin"]')).to_be_visible()
    assert Assignment.objects.filter(batch=batch, annotator=erin, round=1).exists()

    # erin logs in, starts the batch from her home page, selects words and presses 1.
    log_in(erin_page, erin)
    erin_page.click('[data-role="next-sample"]')
    expect(erin_page.locator("#annotator.ready")).to_be_visible()
    sample = batch.samples.order_by("position").first()
    assert erin_page.url.startswith(f"{live_server.url}/projects/demo/samples/{sample.pk}/")
    select_words(erin_page, "summary", sample.summary, "nine weeks")
    erin_page.keyboard.press("1")
    expect(erin_page.locator("[data-span-id]")).to_have_count(1)

    span = eventually(lambda: SpanAnnotation.objects.filter(annotator=erin).first())
    start = sample.summary.index("nine weeks")
    assert (span.sample_id, span.round, span.start, span.end, span.text) == (
        sample.pk, 1, start, start + len("nine weeks"), "nine weeks"
    )
    assert span.labels == ["Unwanted", "Unwanted.Intrinsic"]
    erin_context.close()
    assert not [url for url in visited if "/admin/" in url]
