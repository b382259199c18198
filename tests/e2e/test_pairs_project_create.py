"""A new user's whole start of a pairs project in a real browser: New project, kind Perturbed pairs, import the
demo pairs on the page it opens. Nothing here goes through a management command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from playwright.sync_api import Page, expect

from annotate.models import Membership, PairConfig, PairItem, Project

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DEMO_PAIRS = Path(settings.BASE_DIR) / "fixtures" / "demo_pairs.jsonl"


def test_an_admin_creates_a_pairs_project_and_imports_the_demo_pairs_from_its_page(
    page: Page, live_server: Any, log_in: Any, admin_user: Any
) -> None:
    rows = sum(1 for line in DEMO_PAIRS.read_text(encoding="utf-8").splitlines() if line.strip())
    log_in(page, admin_user)
    page.get_by_role("link", name="New project").click()
    page.get_by_label("Name").fill("Bridge texts")
    kinds = page.locator("[data-role='project-kind']")
    expect(kinds.locator("input[value='spans']")).to_be_checked()  # the default, until the user picks pairs
    kinds.locator("input[value='pairs']").check()
    page.get_by_role("button", name="Create").click()

    page.wait_for_url(f"{live_server.url}/projects/bridge-texts/")
    expect(page.locator("h1")).to_have_text("Bridge texts")
    expect(page.get_by_text("Perturbed pairs (HaDes)")).to_be_visible()
    project = Project.objects.get(slug="bridge-texts")
    assert project.kind == Project.Kind.PAIRS and PairConfig.objects.filter(project=project).exists()
    assert project.memberships.get().user == admin_user
    assert project.memberships.get().role == Membership.Role.ADMIN

    section = page.locator("#import")
    section.locator("input[name='format'][value='pairs']").check()
    section.locator("input[type='file'][name='files']").set_input_files(str(DEMO_PAIRS))
    section.get_by_role("button", name="Import").click()

    expect(page.locator(".messages li.success")).to_contain_text(f"Imported {rows} items (0 labelled, {rows} in the pool)")
    expect(page.locator("#pair-status tr[data-state='pool'] td")).to_have_text(str(rows))
    assert PairItem.objects.filter(project=project, state=PairItem.State.POOL).count() == rows
