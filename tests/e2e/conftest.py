"""Browser tests: Playwright drives Debian's Chromium against pytest-django's live server."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest

# Playwright's sync API runs an event loop in this thread; the ORM calls made by
# the tests themselves are still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402

from tests.conftest import PASSWORD  # noqa: E402
from tests.e2e.worker_helpers import worker  # noqa: E402, F401 (a fixture: a real Celery worker)

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium not found at {CHROMIUM}; `make test` installs Debian's chromium package")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def log_in(live_server: Any) -> Callable[[Page, Any], None]:
    """Log a user in through the real login form."""

    def do(page: Page, user: Any) -> None:
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("input[name=username]", user.username)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{live_server.url}/")

    return do
