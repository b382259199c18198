"""The sample browser shows a page of rows at a time: its links keep the filters, a jump opens a sample on any page,
a page number out of range shows a page, and the queries do not grow with the page's size.

The batch is ``big_batch`` of test_sample_browser: sample i (0-based, number i + 1) is written by gen-(i % 4); alice
and bob submitted and marked every sample done; even samples carry one span each (B, Q, U cycling by i % 3), odd
ones none, so an odd sample's worst label is C.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from annotate.models import Batch, Project, Sample
from annotate.services import browse, flags
from tests.annotate.test_sample_browser import HTMX, big_batch, url
from tests.conftest import login
from tests.queries import counted

pytestmark = pytest.mark.django_db


def numbers(page: str) -> list[int]:
    """The sample numbers of the rows a page shows, in order."""
    return [int(number) for number in re.findall(r'<tr data-sample="\d+" data-number="(\d+)"', page)]


def link(page: str, rel: str) -> str | None:
    """The query of the page's previous or next link, unescaped; None when the page has none."""
    found = re.search(rf'<a href="\?([^"]*)" rel="{rel}">', page)
    return html.unescape(found.group(1)) if found else None


def test_a_500_sample_batch_shows_100_rows_a_page(project: Project, admin_user: Any) -> None:
    batch = big_batch(project, "b500", 500, [])
    client = login(admin_user)
    first = client.get(url(batch)).content.decode()
    assert numbers(first) == list(range(1, 101))
    assert "Rows 1–100 of 500</span>, round 1." in first and "page 1 of 5" in first
    last = client.get(url(batch, "page=5")).content.decode()
    assert numbers(last) == list(range(401, 501)) and "Rows 401–500 of 500" in last and link(last, "next") is None


def test_page_links_keep_the_filters_and_walk_every_matching_row(
    project: Project, alice: Any, bob: Any, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(browse, "ROWS_PER_PAGE", 3)
    batch = big_batch(project, "b45", 45, [alice, bob])  # big_batch flags sample 3 (i = 3: gen-3)
    samples = list(Sample.objects.filter(batch=batch).order_by("position"))
    for i in (1, 5, 9, 13, 17, 21, 25, 29, 30, 31):  # flagged: eight gen-1 samples (worst C), 30 and 31 are not gen-1
        flags.flag_sample(samples[i], alice, round=1, kind="skip", comment="")
    query = "generator=gen-1&worst=C&done=all&flagged=1"
    client = login(admin_user)
    seen, pages, next_query = [], [], query
    while next_query is not None:
        page = client.get(url(batch, next_query)).content.decode()
        seen += numbers(page)
        pages.append(page)
        next_query = link(page, "next")
        if next_query is not None:
            assert next_query.startswith(query + "&page="), f"the next link lost the filters: {next_query}"
    # By hand: the flagged gen-1 samples, i = 1, 5, ..., 29, are numbers 2, 6, ..., 30.
    assert seen == [2, 6, 10, 14, 18, 22, 26, 30]
    assert len(pages) == 3 and "page 3 of 3" in pages[2]
    assert "Rows 4–6 of 8 matching the filters, of 45 samples" in pages[1]
    assert link(pages[2], "prev") == query + "&page=2"


def test_jump_opens_a_sample_shown_on_page_3_from_page_1(project: Project, admin_user: Any) -> None:
    batch = big_batch(project, "b300", 300, [])
    sample_250 = Sample.objects.get(batch=batch, position=249)
    client = login(admin_user)
    first = client.get(url(batch)).content.decode()
    assert 250 not in numbers(first) and 250 in numbers(client.get(url(batch, "page=3")).content.decode())
    assert 'max="300"' in first  # the jump box takes every sample of the batch, not only the page's
    for query in ("jump=250", "jump=250&page=1", "jump=250&generator=gen-0"):  # another page; filtered out
        response = client.get(url(batch, query))
        assert response.status_code == 302, f"{query}: {response.content.decode()[:300]}"
        assert response["Location"] == f"/projects/demo/samples/{sample_250.pk}/?round=1"
    response = client.get(url(batch, "jump=250"), **HTMX)
    assert response["HX-Redirect"] == f"/projects/demo/samples/{sample_250.pk}/?round=1"


@pytest.mark.parametrize(
    ("page_number", "shown"),
    [("99", "page 3 of 3"), ("abc", "page 1 of 3"), ("", "page 1 of 3"), ("3", "page 3 of 3"), ("0", "page 3 of 3")],
)
def test_a_page_number_out_of_range_shows_a_page(
    project: Project, admin_user: Any, monkeypatch: pytest.MonkeyPatch, page_number: str, shown: str
) -> None:
    monkeypatch.setattr(browse, "ROWS_PER_PAGE", 4)
    batch = big_batch(project, "b10", 10, [])
    response = login(admin_user).get(url(batch, f"page={page_number}"))
    assert response.status_code == 200
    assert shown in response.content.decode()
    expected = [9, 10] if shown == "page 3 of 3" else [1, 2, 3, 4]
    assert numbers(response.content.decode()) == expected


def test_a_page_past_the_end_of_no_matching_rows_says_so(project: Project, admin_user: Any) -> None:
    batch = big_batch(project, "b10", 10, [])
    response = login(admin_user).get(url(batch, "generator=nobody&page=4"))
    page = response.content.decode()
    assert response.status_code == 200 and numbers(page) == []
    assert "No rows matching the filters, of 10 samples" in page and 'data-role="pages"' not in page


def test_htmx_page_link_gets_the_table_with_its_links(
    project: Project, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(browse, "ROWS_PER_PAGE", 4)
    batch = big_batch(project, "b10", 10, [])
    response = login(admin_user).get(url(batch, "generator=gen-1&page=2"), **HTMX)
    page = response.content.decode()
    assert response.status_code == 200 and page.lstrip().startswith('<section id="samples">')
    # gen-1: i = 1, 5, 9, numbers 2, 6, 10; page 2 of 4 a page is empty, so the last page (1) is shown.
    assert numbers(page) == [2, 6, 10] and 'data-role="pages"' not in page
    page = login(admin_user).get(url(batch, "page=2"), **HTMX).content.decode()
    assert numbers(page) == [5, 6, 7, 8] and link(page, "prev") == "page=1" and link(page, "next") == "page=3"


def test_the_queries_do_not_grow_with_the_page_size(
    project: Project, alice: Any, bob: Any, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch: Batch = big_batch(project, "b120", 120, [alice, bob])
    client = login(admin_user)
    client.get(url(batch))
    counts = {}
    for size in (5, 100):
        monkeypatch.setattr(browse, "ROWS_PER_PAGE", size)
        with counted() as statements:
            page = client.get(url(batch, "page=2")).content.decode()
        assert numbers(page) == list(range(size + 1, min(2 * size, 120) + 1))
        counts[size] = len(statements)
    assert counts[5] == counts[100], counts
