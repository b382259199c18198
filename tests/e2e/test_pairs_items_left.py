"""In a browser: the labeling page's toolbar and the project page show the same "items left for you", item on screen."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import PairItem, Project
from tests.e2e.test_pairs_labeling import make_text_items, open_labeling, shown_item
from tests.pairs import conftest as pairs_fixtures

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

pairs_project = pairs_fixtures.pairs_project


def project_page_left(page: Page, live_server: Any, project: Project) -> str:
    page.goto(live_server.url + reverse("project", args=[project.slug]))
    progress = page.locator('[data-role="my-progress"]')
    expect(progress).to_contain_text("left for you")
    return progress.locator('[data-role="left"]').inner_text()


def test_the_toolbar_and_the_project_page_agree_while_an_item_is_on_screen(
    page: Page, live_server: Any, log_in: Any, alice: Any, pairs_project: Project
) -> None:
    items: list[PairItem] = make_text_items(pairs_project)
    log_in(page, alice)
    open_labeling(page, live_server, pairs_project)
    shown_item(page, items[0])
    toolbar = page.locator('[data-role="progress"]')
    expect(toolbar).to_contain_text("3 items left for you")
    on_screen = page.locator('[data-role="left"]').inner_text()

    other = page.context.new_page()
    assert project_page_left(other, live_server, pairs_project) == on_screen == "3"

    page.keyboard.press("h")
    shown_item(page, items[1])
    page.keyboard.press("n")
    shown_item(page, items[2])
    expect(toolbar).to_contain_text("1 item left for you")
    assert project_page_left(other, live_server, pairs_project) == "1"
