"""The lists that grew with the data show a page of rows at a time, with the pager of the sample browser and the
curation page (templates/_pages.html): the span project page's batches, one batch's disputes, the flags page's two
lists and the annotator's home page. Each page keeps the totals of the whole list, its links keep the rest of the
query, and page 1's HTML does not grow when rows are added after it.

Most tests shrink the page size (monkeypatch; raising=False, so that on code without pages they fail on what the
page shows) so that a few rows fill several pages; one per list checks the size the pages really use (100 rows, as
the sample browser).
"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.utils import timezone

from annotate.models import Assignment, Batch, Job, Passage, Project, Sample, SampleFlag, SpanAnnotation
from annotate.services import browse, flags, pages, projects
from annotate.views.agreement import disputes
from tests.annotate.test_project_page_queries import add_batches
from tests.conftest import SOURCE, login
from tests.queries import counted

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
PROJECT_URL = "/projects/demo/"
FLAGS_URL = "/projects/demo/flags/"


def link(page: str, rel: str, within: str = "") -> str | None:
    """The query of the previous or next link (of the nav labelled ``within`` when given), unescaped; None when there
    is none."""
    if within:
        nav = re.search(rf'<nav class="row" data-role="pages" aria-label="{within}">(.*?)</nav>', page, re.S)
        if nav is None:
            return None
        page = nav.group(1)
    found = re.search(rf'<a href="\?([^"]*)" rel="{rel}">', page)
    return html.unescape(found.group(1)) if found else None


def test_every_list_pages_by_the_sample_browsers_size() -> None:
    assert browse.ROWS_PER_PAGE == 100
    assert pages.BATCHES_PER_PAGE == projects.ASSIGNMENTS_PER_PAGE == flags.FLAGS_PER_PAGE == 100
    assert disputes.DISPUTES_PER_PAGE == 100


# --------------------------------------------------------------------------- the span project page's batches


def batch_rows(page: str) -> list[str]:
    return re.findall(r'<tr data-batch="(\d+)">', page)


def test_the_project_page_shows_100_batches_a_page_with_the_totals_of_all(
    project: Project, alice: Any, admin_user: Any
) -> None:
    made = add_batches(project, 101, [alice], submitted=False)
    client = login(admin_user)
    first = client.get(PROJECT_URL).content.decode()
    assert batch_rows(first) == [str(batch.pk) for batch in made[:100]]
    assert '<span data-role="sample-count">303 samples</span>' in first  # every batch's samples, not the page's
    assert "101 batches; showing 1–100." in first and "page 1 of 2" in first
    assert link(first, "next", "batch pages") == "page=2" and link(first, "prev", "batch pages") is None
    second = client.get(PROJECT_URL + "?page=2").content.decode()
    assert batch_rows(second) == [str(made[100].pk)]
    assert "101 batches; showing 101–101." in second and link(second, "prev", "batch pages") == "page=1"
    # Its progress is the batch's own: one review of its three samples.
    assert re.search(r'<span data-role="done">1 / 3</span>', second)


def test_one_page_of_batches_shows_no_count_and_no_links(project: Project, alice: Any, admin_user: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pages, "BATCHES_PER_PAGE", 3, raising=False)
    add_batches(project, 3, [alice], submitted=False)
    page = login(admin_user).get(PROJECT_URL).content.decode()
    assert len(batch_rows(page)) == 3
    assert 'data-role="batch-count"' not in page and 'data-role="pages"' not in page


def test_the_project_pages_first_page_does_not_grow_with_the_batches(
    project: Project, alice: Any, bob: Any, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pages, "BATCHES_PER_PAGE", 3, raising=False)
    add_batches(project, 4, [alice, bob], submitted=True)
    client = login(admin_user)
    client.get(PROJECT_URL)
    with counted() as few:
        before = client.get(PROJECT_URL).content.decode()
    add_batches(project, 20, [alice, bob], submitted=True, start=4)
    with counted() as many:
        after = client.get(PROJECT_URL).content.decode()
    assert len(batch_rows(before)) == len(batch_rows(after)) == 3
    assert "4 batches; showing 1–3." in before and "24 batches; showing 1–3." in after
    assert len(after) - len(before) < 40, f"page 1 grew from {len(before)} to {len(after)} bytes"
    assert len(many) == len(few)


def test_an_annotator_pages_through_their_own_batches(
    project: Project, alice: Any, bob: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pages, "BATCHES_PER_PAGE", 3, raising=False)
    mine = add_batches(project, 4, [alice, bob], submitted=False)
    add_batches(project, 5, [bob], submitted=False, start=4)  # not alice's: not listed for her
    client = login(alice)
    first = client.get(PROJECT_URL).content.decode()
    second = client.get(PROJECT_URL + "?page=2").content.decode()
    assert batch_rows(first) == [str(batch.pk) for batch in mine[:3]]
    assert batch_rows(second) == [str(mine[3].pk)]
    assert "4 batches; showing 1–3." in first and "page 2 of 2" in second
    assert "12 samples assigned to you of 27" in first  # her share of every page's batches
    # Her Start link on page 2 leads to her first sample not done there (the first one is reviewed done).
    second_sample = mine[3].samples.order_by("position")[1]
    assert f'href="/projects/demo/samples/{second_sample.pk}/?round=1">Continue</a>' in second


def test_the_batches_section_polls_its_own_page_while_a_job_runs(
    project: Project, alice: Any, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pages, "BATCHES_PER_PAGE", 3, raising=False)
    made = add_batches(project, 5, [alice], submitted=False)
    Job.objects.create(project=project, kind=Job.Kind.EMBED)  # queued: the section polls
    client = login(admin_user)
    page = client.get(PROJECT_URL + "?page=2").content.decode()
    assert 'hx-get="/projects/demo/?page=2" hx-trigger="every 3s" hx-target="#progress"' in page
    partial = client.get(PROJECT_URL + "?page=2", HTTP_HX_TARGET="progress", **HTMX).content.decode()
    assert partial.lstrip().startswith('<section id="progress"') and "<html" not in partial
    assert batch_rows(partial) == [str(batch.pk) for batch in made[3:]]
    assert "5 batches; showing 4–5." in partial and link(partial, "prev", "batch pages") == "page=1"


@pytest.mark.parametrize(("page_number", "shown"), [("99", "page 2 of 2"), ("abc", "page 1 of 2"), ("0", "page 2 of 2")])
def test_a_batch_page_out_of_range_shows_a_page(project: Project, alice: Any, admin_user: Any,
                                                monkeypatch: pytest.MonkeyPatch, page_number: str, shown: str) -> None:
    monkeypatch.setattr(pages, "BATCHES_PER_PAGE", 3, raising=False)
    add_batches(project, 4, [alice], submitted=False)
    response = login(admin_user).get(PROJECT_URL, {"page": page_number})
    assert response.status_code == 200 and shown in response.content.decode()


# --------------------------------------------------------------------------- the annotator's home page


def home_rows(page: str) -> list[str]:
    return re.findall(r"<td>(b\d+)</td>", page)


def test_the_home_page_shows_100_assignments_a_page_with_their_count(project: Project, alice: Any) -> None:
    add_batches(project, 101, [alice], submitted=False)
    client = login(alice)
    first = client.get("/").content.decode()
    assert home_rows(first) == [f"b{number}" for number in range(100)]
    assert "101 assignments (a batch in a round); showing 1–100." in first and "page 1 of 2" in first
    second = client.get("/?page=2").content.decode()
    assert home_rows(second) == ["b100"] and "1 / 3" in second and link(second, "prev", "batch pages") == "page=1"


def test_the_home_pages_first_page_does_not_grow_with_the_assignments(
    project: Project, alice: Any, bob: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(projects, "ASSIGNMENTS_PER_PAGE", 3, raising=False)
    add_batches(project, 4, [alice, bob], submitted=False)
    client = login(alice)
    client.get("/")
    with counted() as few:
        before = client.get("/").content.decode()
    add_batches(project, 20, [alice, bob], submitted=False, start=4)
    with counted() as many:
        after = client.get("/").content.decode()
    assert home_rows(before) == home_rows(after) == ["b0", "b1", "b2"]
    assert "4 assignments" in before and "24 assignments" in after and "page 1 of 8" in after
    assert len(after) - len(before) < 40, f"page 1 grew from {len(before)} to {len(after)} bytes"
    assert len(many) == len(few)
    last = client.get("/?page=8").content.decode()
    assert home_rows(last) == ["b21", "b22", "b23"] and last.count("1 / 3") == 3


def test_a_few_assignments_show_no_count_and_no_links(project: Project, alice: Any) -> None:
    add_batches(project, 2, [alice], submitted=False)
    page = login(alice).get("/").content.decode()
    assert home_rows(page) == ["b0", "b1"]
    assert 'data-role="assignment-count"' not in page and 'data-role="pages"' not in page


# --------------------------------------------------------------------------- the flags page


def flag_rows(page: str, table: str) -> list[str]:
    found = re.search(rf'<table class="grid" data-role="{table}">(.*?)</table>', page, re.S)
    assert found is not None, f"no {table} table"
    return re.findall(r'<tr data-flag="(\d+)">', found.group(1))


def add_flags(project: Project, people: list[Any], count: int, *, resolved_by: Any = None, start: int = 0) -> list[int]:
    """``count`` flags on samples of a batch of their own, each raised by one of ``people`` in turn, in order."""
    passage = Passage.objects.get_or_create(project=project, external_id="p", defaults={"text": SOURCE})[0]
    batch = Batch.objects.create(project=project, name=f"flagged-{start}-{count}", position=1000 + start)
    made = []
    for number in range(count):
        sample = Sample.objects.create(project=project, passage=passage, batch=batch, position=number,
                                       external_id=f"f{start + number}", summary="A summary.")
        made.append(SampleFlag.objects.create(
            sample=sample, annotator=people[number % len(people)], round=1, kind=SampleFlag.Kind.BROKEN,
            comment=f"broken text {start + number}",
            resolved_at=timezone.now() if resolved_by else None, resolved_by=resolved_by).pk)
    return made


def test_the_flags_page_pages_each_list_apart_with_their_totals(
    project: Project, alice: Any, bob: Any, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flags, "FLAGS_PER_PAGE", 3, raising=False)
    open_ids = add_flags(project, [alice, bob], 5)  # oldest first
    resolved_ids = add_flags(project, [alice], 4, resolved_by=admin_user, start=100)
    resolved_ids.reverse()  # latest resolution first: the last one made
    client = login(admin_user)
    first = client.get(FLAGS_URL).content.decode()
    assert flag_rows(first, "open-flags") == [str(pk) for pk in open_ids[:3]]
    assert flag_rows(first, "resolved-flags") == [str(pk) for pk in resolved_ids[:3]]
    assert "<h2>Open (5)</h2>" in first and "<h2>Resolved (4)</h2>" in first
    assert link(first, "next", "open flag pages") == "page=2"
    assert link(first, "next", "resolved flag pages") == "resolved_page=2"
    # Each list's links keep the other list's page.
    later = client.get(FLAGS_URL + "?page=2&resolved_page=2").content.decode()
    assert flag_rows(later, "open-flags") == [str(pk) for pk in open_ids[3:]]
    assert flag_rows(later, "resolved-flags") == [str(resolved_ids[3])]
    assert link(later, "prev", "open flag pages") == "resolved_page=2&page=1"
    assert link(later, "prev", "resolved flag pages") == "page=2&resolved_page=1"
    assert "Showing 4–5." in later and "Showing 4–4." in later


def test_resolving_on_page_2_answers_the_lists_on_their_pages(
    project: Project, alice: Any, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flags, "FLAGS_PER_PAGE", 3, raising=False)
    open_ids = add_flags(project, [alice], 7)
    client = login(admin_user)
    page = client.get(FLAGS_URL + "?page=2").content.decode()
    resolve = f"/projects/demo/flags/{open_ids[4]}/resolve/?page=2"
    assert f'hx-post="{resolve}"' in page
    partial = client.post(resolve, **HTMX).content.decode()
    assert partial.lstrip().startswith('<div id="flag-lists">')
    assert flag_rows(partial, "open-flags") == [str(pk) for pk in (open_ids[3], open_ids[5], open_ids[6])]
    assert "<h2>Open (6)</h2>" in partial and "<h2>Resolved (1)</h2>" in partial
    # Without htmx: back to the same page.
    response = client.post(f"/projects/demo/flags/{open_ids[5]}/resolve/?page=2")
    assert response.status_code == 302 and response["Location"] == "/projects/demo/flags/?page=2"
    boosted = client.get(FLAGS_URL + "?page=2", **HTMX).content.decode()
    assert flag_rows(boosted, "open-flags") == [str(open_ids[3]), str(open_ids[6])] and "<html" not in boosted


def test_the_flags_pages_first_page_does_not_grow_with_the_flags(
    project: Project, alice: Any, bob: Any, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flags, "FLAGS_PER_PAGE", 3, raising=False)
    add_flags(project, [alice, bob], 4)
    add_flags(project, [alice], 4, resolved_by=admin_user, start=100)
    client = login(admin_user)
    client.get(FLAGS_URL)
    with counted() as few:
        before = client.get(FLAGS_URL).content.decode()
    # Newer open flags come after page 1 (oldest first).
    add_flags(project, [alice, bob], 20, start=200)
    with counted() as many:
        after = client.get(FLAGS_URL).content.decode()
    assert flag_rows(before, "open-flags") == flag_rows(after, "open-flags")
    assert len(flag_rows(after, "open-flags")) == 3 and "<h2>Open (24)</h2>" in after
    assert len(after) - len(before) < 40, f"page 1 grew from {len(before)} to {len(after)} bytes"
    assert len(many) == len(few)


def test_a_few_flags_show_no_page_links(project: Project, alice: Any, admin_user: Any) -> None:
    add_flags(project, [alice], 2)
    page = login(admin_user).get(FLAGS_URL).content.decode()
    assert len(flag_rows(page, "open-flags")) == 2 and "<h2>Open (2)</h2>" in page
    assert 'data-role="pages"' not in page


# --------------------------------------------------------------------------- one batch's disputes


def disputed_batch(project: Project, people: list[Any], disputed: int, agreed: int, name: str = "big") -> Batch:
    """``disputed`` samples on which the first of ``people`` marks an Unwanted span and the others none, then
    ``agreed`` samples without spans; every one of ``people`` submitted round 1."""
    passage = Passage.objects.get_or_create(project=project, external_id="p", defaults={"text": SOURCE})[0]
    batch = Batch.objects.create(project=project, name=name)
    for position in range(disputed + agreed):
        sample = Sample.objects.create(project=project, passage=passage, batch=batch, position=position,
                                       external_id=f"{name}-{position}", summary="A short summary of it.")
        if position < disputed:
            SpanAnnotation.objects.create(sample=sample, annotator=people[0], round=1, start=0, end=7,
                                          text="A short", labels=["Unwanted", "Unwanted.Intrinsic"])
    for person in people:
        Assignment.objects.create(batch=batch, annotator=person, round=1, status=Assignment.Status.SUBMITTED)
    return batch


def dispute_rows(page: str) -> list[str]:
    return re.findall(r'<tr data-sample="(\d+)">', page)


def disputes_url(batch: Batch, extra: str = "") -> str:
    return f"/projects/demo/disputes/?batch={batch.pk}&round=1&scheme=C|B|Q|U" + (f"&{extra}" if extra else "")


def test_the_disputes_of_a_batch_show_100_a_page_with_the_total(
    project: Project, alice: Any, bob: Any, admin_user: Any
) -> None:
    batch = disputed_batch(project, [alice, bob], 101, 9)
    ids = [str(pk) for pk in batch.samples.order_by("position").values_list("pk", flat=True)]
    client = login(admin_user)
    first = client.get(disputes_url(batch)).content.decode()
    assert dispute_rows(first) == ids[:100]
    assert "<strong>101</strong> of 110 samples in dispute (showing 1–100)" in first and "page 1 of 2" in first
    second = client.get(disputes_url(batch, "page=2")).content.decode()
    assert dispute_rows(second) == [ids[100]] and "(showing 101–101)" in second
    # The links keep the batch, the round and the scheme.
    assert link(second, "prev", "dispute pages") == f"batch={batch.pk}&round=1&scheme=C%7CB%7CQ%7CU&page=1"


def test_the_disputes_first_page_does_not_grow_with_the_disputes(
    project: Project, alice: Any, bob: Any, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(disputes, "DISPUTES_PER_PAGE", 3, raising=False)
    small = disputed_batch(project, [alice, bob], 4, 2, name="small")
    large = disputed_batch(project, [alice, bob], 24, 2, name="large")
    client = login(admin_user)
    client.get(disputes_url(small))
    with counted() as few:
        before = client.get(disputes_url(small)).content.decode()
    with counted() as many:
        after = client.get(disputes_url(large)).content.decode()
    assert len(dispute_rows(before)) == len(dispute_rows(after)) == 3
    assert "<strong>4</strong> of 6 samples" in before and "<strong>24</strong> of 26 samples" in after
    assert "page 1 of 2" in before and "page 1 of 8" in after
    assert len(after) - len(before) < 40, f"page 1 grew from {len(before)} to {len(after)} bytes"
    assert len(many) == len(few)


def test_a_disputes_page_link_swaps_the_results_only(
    project: Project, alice: Any, bob: Any, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(disputes, "DISPUTES_PER_PAGE", 3, raising=False)
    batch = disputed_batch(project, [alice, bob], 5, 1)
    ids = [str(pk) for pk in batch.samples.order_by("position").values_list("pk", flat=True)]
    client = login(admin_user)
    page = client.get(disputes_url(batch)).content.decode()
    assert '<div hx-boost="true" hx-target="#disputes-results" hx-swap="outerHTML">' in page
    partial = client.get(disputes_url(batch, "page=2"), **HTMX).content.decode()
    assert partial.lstrip().startswith('<div id="disputes-results">') and "<html" not in partial
    assert dispute_rows(partial) == ids[3:5] and "<strong>5</strong> of 6 samples in dispute (showing 4–5)" in partial


def test_a_few_disputes_show_no_page_links(project: Project, alice: Any, bob: Any, admin_user: Any) -> None:
    batch = disputed_batch(project, [alice, bob], 2, 1)
    page = login(admin_user).get(disputes_url(batch)).content.decode()
    assert len(dispute_rows(page)) == 2 and "<strong>2</strong> of 3 samples in dispute ·" in page
    assert 'data-role="pages"' not in page
