"""Back on the sample browser: the filter form agrees with the table htmx restores, whether from its history cache
(static/js/history-forms.js sets the form from the URL) or, on a cache miss, from the server (the whole page,
not the table's fragment: historyRestoreAsHxRequest is false in base.html's htmx-config).

The batch is ``big_batch`` of test_sample_browser, 40 samples: sample i (number i + 1) is by gen-(i % 4), and
alice's and bob's span on an even sample is B, Q, U cycling by i % 3; odd samples have none (worst C). Worst U, by
hand: i = 2, 8, 14, 20, 26, 32, 38, numbers 3, 9, 15, 21, 27, 33, 39, by gen-2 and gen-0 in turn; three rows a
page make three pages of U rows. Of them gen-2 wrote numbers 3, 15, 27, 39.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotate.models import Batch, Project
from annotate.services import browse
from tests.annotate.test_sample_browser import big_batch, url

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

FILTERS = "#sample-filters"
SHOWN = "[data-role=rows-shown]"


@pytest.fixture
def forty(project: Project, alice: Any, bob: Any, monkeypatch: pytest.MonkeyPatch) -> Batch:
    monkeypatch.setattr(browse, "ROWS_PER_PAGE", 3)  # the live server runs in this process
    return big_batch(project, "b40", 40, [alice, bob])


def numbers(page: Page) -> list[int]:
    return [int(number) for number in page.locator("table.samples tbody tr").evaluate_all(
        "rows => rows.map(row => row.dataset.number)")]


def filter_worst_u_and_page(page: Page, live_server: Any, batch: Batch) -> None:
    """Open the browser, pick Worst = U, go to page 2."""
    page.goto(live_server.url + url(batch))
    page.select_option(f"{FILTERS} select[name=worst]", "U")
    page.wait_for_url(re.compile(r"worst=U"))
    expect(page.locator(SHOWN)).to_contain_text("Rows 1–3 of 7 matching the filters")
    page.click("[data-role=pages] a[rel=next]")
    page.wait_for_url(re.compile(r"worst=U.*page=2"))
    expect(page.locator(SHOWN)).to_contain_text("Rows 4–6 of 7")


def test_back_after_paging_keeps_the_worst_filter_in_the_form_and_the_next_change_keeps_it(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, forty: Batch
) -> None:
    log_in(page, admin_user)
    filter_worst_u_and_page(page, live_server, forty)
    page.click("[data-role=pages] a[rel=prev]")
    page.wait_for_url(re.compile(r"page=1"))
    expect(page.locator(SHOWN)).to_contain_text("Rows 1–3 of 7")

    page.go_back()  # page 2 again, from htmx's history cache
    expect(page.locator(SHOWN)).to_contain_text("Rows 4–6 of 7")
    assert numbers(page) == [21, 27, 33]
    expect(page.locator(f"{FILTERS} select[name=worst]")).to_have_value("U")

    page.select_option(f"{FILTERS} select[name=generator]", "gen-2")
    page.wait_for_url(re.compile(r"generator=gen-2"))
    assert "worst=U" in page.url, page.url
    expect(page.locator(SHOWN)).to_contain_text("Rows 1–3 of 4 matching the filters")
    assert numbers(page) == [3, 15, 27]


def test_back_that_misses_the_history_cache_gets_the_whole_page(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, forty: Batch
) -> None:
    log_in(page, admin_user)
    filter_worst_u_and_page(page, live_server, forty)
    page.evaluate("sessionStorage.removeItem('htmx-history-cache')")  # as when the cache was full or cleared

    with page.expect_response(lambda response: "page=" not in response.url and "worst=U" in response.url) as restore:
        page.go_back()
    expect(page.locator(SHOWN)).to_contain_text("Rows 1–3 of 7")
    expect(page.locator("header.topbar")).to_have_count(1)
    expect(page.locator(FILTERS)).to_have_count(1)
    expect(page.locator(f"{FILTERS} select[name=worst]")).to_have_value("U")
    assert numbers(page) == [3, 9, 15]
    headers = restore.value.request.headers
    assert headers.get("hx-history-restore-request") == "true" and "hx-request" not in headers
