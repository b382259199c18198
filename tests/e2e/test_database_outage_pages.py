"""The span page, when the API answers 503 for a full disk (config/database_busy.py) past every retry: the save
status shows the server's words (tell the operator), not a bare "server error 503"."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Sample
from config.database_busy import DISK_FULL_DETAIL
from tests.e2e.annotation_helpers import open_sample, select_words

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_full_disk_shows_the_servers_words_after_the_retries(
    page: Page, live_server: Any, log_in: Any, alice: Any, sample: Sample
) -> None:
    log_in(page, alice)
    open_sample(page, live_server, sample)
    page.route("**/api/spans/", lambda route: route.fulfill(
        status=503, content_type="application/json", body=json.dumps({"detail": DISK_FULL_DETAIL})))
    select_words(page, "summary", sample.summary, "nine weeks")
    page.keyboard.press("1")

    status = page.locator('[data-role="save-status"]')
    expect(status).to_have_text("Failed — retrying")
    expect(status).to_contain_text("tell the operator", timeout=90_000)  # after ~51 s of patient retries
    expect(status).to_have_attribute("data-state", "failed")
