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

from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright  # noqa: E402
from playwright.sync_api import Error as PlaywrightError  # noqa: E402

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
def new_page(browser: Browser) -> Iterator[Callable[..., Page]]:
    """Open a page in a browser context of its own: the usual 1400x900 window and 15 s timeout, with Playwright's
    context options laid over them (a user agent, another viewport, a zoom). Every context it opened is closed after
    the test, so a test needing an odd browser asks for one page instead of writing the context's life again."""
    contexts: list[BrowserContext] = []

    def open_page(**options: Any) -> Page:
        context = browser.new_context(**{"viewport": {"width": 1400, "height": 900}, **options})
        context.set_default_timeout(15_000)
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        # Leave each page first, while the test's database is still there: the span page sends the time of the
        # visit as it is left (static/annotate/review.js), and a request arriving once the database is flushed fails.
        for opened in context.pages:
            try:
                opened.goto("about:blank", timeout=5_000)
            except PlaywrightError:
                pass  # a page that will not leave (a dialog open) is closed all the same
        context.close()


@pytest.fixture
def page(new_page: Callable[..., Page]) -> Page:
    return new_page()


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
