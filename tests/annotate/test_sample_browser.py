"""The sample browser of a batch: progress per annotator, worst labels by hand, filters, jump, access, queries.

The built case (batch-1 of the shared fixture: samples 0, 1, 2 by model-a, model-b, model-c):

- alice, submitted: s0 Benign, s1 Unwanted.Intrinsic, s2 nothing; seconds 30, 60, 90.
- bob, submitted: s0 Questionable, s1 nothing, s2 Benign + Benign; seconds 10, 0 (not recorded), 20.
- carol, assigned, not submitted: s0 done (5 s), s2 Unwanted.Extrinsic not done. Her span does not count.

Worst labels over the submitters (alice, bob), by hand: s0 = worst(B, Q) = Q; s1 = worst(U, C) = U;
s2 = worst(C, B) = B. Medians (done samples with time recorded): alice median(30, 60, 90) = 60,
bob median(10, 20) = 15, carol median(5) = 5.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotate.models import Assignment, Batch, Membership, Passage, Project, Sample, SampleReview, SpanAnnotation
from annotate.services import flags, spans
from tests.conftest import login

pytestmark = pytest.mark.django_db


def make_user(username: str) -> Any:
    """A user without a password (hashing one takes most of a test's time); tests log in with force_login."""
    return get_user_model().objects.create_user(username=username)
HTMX = {"HTTP_HX_REQUEST": "true"}


def url(batch: Batch, query: str = "") -> str:
    return f"/projects/{batch.project.slug}/batches/{batch.pk}/samples/" + (f"?{query}" if query else "")


@pytest.fixture
def scene(batch: Batch, project: Project, alice: Any, bob: Any, admin_user: Any) -> dict[str, Any]:
    carol = make_user("carol")
    Membership.objects.create(project=project, user=carol, role=Membership.Role.ANNOTATOR)
    Assignment.objects.create(batch=batch, annotator=carol)
    s0, s1, s2 = batch.samples.order_by("position")
    spans.create_span(s0, alice, round=1, start=0, end=4, labels=["Benign"])
    spans.create_span(s1, alice, round=1, start=0, end=4, labels=["Unwanted.Intrinsic"])
    spans.create_span(s0, bob, round=1, start=0, end=4, labels=["Questionable"])
    spans.create_span(s2, bob, round=1, start=0, end=4, labels=["Benign"])
    spans.create_span(s2, bob, round=1, start=5, end=9, labels=["Benign"])
    spans.create_span(s2, carol, round=1, start=0, end=4, labels=["Unwanted.Extrinsic"])
    for sample, seconds in zip((s0, s1, s2), (30, 60, 90), strict=True):
        spans.mark_sample_done(sample, alice, round=1, done=True, seconds=seconds)
    for sample, seconds in zip((s0, s1, s2), (10, 0, 20), strict=True):
        spans.mark_sample_done(sample, bob, round=1, done=True, seconds=seconds)
    spans.mark_sample_done(s0, carol, round=1, done=True, seconds=5)
    auditor, curator = make_user("audrey"), make_user("cora")
    Membership.objects.create(project=project, user=auditor, role=Membership.Role.AUDITOR)
    Membership.objects.create(project=project, user=curator, role=Membership.Role.CURATOR)
    return {"batch": batch, "samples": (s0, s1, s2), "carol": carol, "auditor": auditor, "curator": curator,
            "admin": admin_user, "alice": alice, "bob": bob}


def rows_of(response: Any) -> list[Any]:
    assert response.status_code == 200, response.content.decode()[:500]
    return response.context["page"].rows


def test_admin_sees_progress_worst_labels_and_time(scene: dict[str, Any]) -> None:
    s0, s1, s2 = scene["samples"]
    response = login(scene["admin"]).get(url(scene["batch"]))
    page = response.context["page"]
    assert [person.username for person in page.annotators] == ["alice", "bob", "carol"]
    assert [(row.number, row.sample_id, row.external_id, row.generator) for row in page.rows] == [
        (1, s0.pk, "0", "model-a"), (2, s1.pk, "1", "model-b"), (3, s2.pk, "2", "model-c")]
    assert [row.worst for row in page.rows] == ["Q", "U", "B"]
    cells = [[(cell.done, cell.spans, cell.seconds) for cell in row.cells] for row in page.rows]
    assert cells == [
        [(True, 1, 30), (True, 1, 10), (True, 0, 5)],
        [(True, 1, 60), (True, 0, 0), (False, 0, 0)],
        [(True, 0, 90), (True, 2, 20), (False, 1, 0)],
    ]
    assert [person.median_seconds for person in page.annotators] == [60, 15, 5]
    assert page.submitters == 2
    html = response.content.decode()
    assert f'data-sample="{s1.pk}" data-number="2" data-worst="U"' in html
    assert f'href="/projects/demo/samples/{s2.pk}/?round=1"' in html
    assert 'data-role="median">median 60 s' in html and 'data-role="seconds">90 s' in html


def test_auditors_and_curators_browse_without_time(scene: dict[str, Any]) -> None:
    for who in ("auditor", "curator"):
        response = login(scene[who]).get(url(scene["batch"]))
        page = response.context["page"]
        assert [row.worst for row in page.rows] == ["Q", "U", "B"]
        assert all(cell.seconds is None for row in page.rows for cell in row.cells)
        assert all(person.median_seconds is None for person in page.annotators)
        html = response.content.decode()
        assert 'data-role="seconds"' not in html and 'data-role="median"' not in html


def test_worst_label_is_empty_before_anyone_submits(batch: Batch, admin_user: Any) -> None:
    rows = rows_of(login(admin_user).get(url(batch)))
    assert [row.worst for row in rows] == [None, None, None]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("generator=model-a", [1]),
        ("worst=U", [2]),
        ("worst=b", [3]),
        ("worst=C", []),
        ("done=all", [1]),
        ("done=open", [2, 3]),
        ("generator=model-c&done=open", [3]),
        ("generator=unknown", []),
    ],
)
def test_filters(scene: dict[str, Any], query: str, expected: list[int]) -> None:
    rows = rows_of(login(scene["admin"]).get(url(scene["batch"], query)))
    assert [row.number for row in rows] == expected


def test_flags_show_in_the_browser_and_filter_it(scene: dict[str, Any]) -> None:
    s0, s1, s2 = scene["samples"]
    flags.flag_sample(s1, scene["bob"], round=1, kind="broken", comment="summary is cut off")
    resolved, _ = flags.flag_sample(s2, scene["alice"], round=1, kind="skip", comment="")
    flags.resolve_flag(resolved, scene["admin"])
    response = login(scene["admin"]).get(url(scene["batch"], "flagged=1"))
    assert [row.number for row in rows_of(response)] == [2]
    assert "Broken by bob: <bdi>summary is cut off</bdi>" in response.content.decode()
    everything = login(scene["admin"]).get(url(scene["batch"])).content.decode()
    assert 'class="flag resolved" data-role="flag">Skip by alice' in everything


def test_round_two_shows_its_own_annotators(scene: dict[str, Any]) -> None:
    batch, s0 = scene["batch"], scene["samples"][0]
    Assignment.objects.create(batch=batch, annotator=scene["alice"], round=2)
    SpanAnnotation.objects.create(sample=s0, annotator=scene["alice"], round=2, start=0, end=4, text="x",
                                  labels=["Benign"])
    page = login(scene["admin"]).get(url(batch, "round=2")).context["page"]
    assert page.rounds == [1, 2] and [person.username for person in page.annotators] == ["alice"]
    assert [row.cells[0].spans for row in page.rows] == [1, 0, 0]
    assert [row.worst for row in page.rows] == [None, None, None]  # nobody submitted round 2 yet


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("worst=X", "worst: &#x27;X&#x27; is not a worst label; choose C, B, Q or U"),
        ("done=maybe", "done: &#x27;maybe&#x27; is not a done filter; choose all or open"),
        ("round=3", "round: batch &#x27;batch-1&#x27; has no round 3 (rounds: 1)"),
        ("round=two", "round: &#x27;two&#x27; is not a round number"),
        ("flagged=yes", "flagged: &#x27;yes&#x27;: use 1 for flagged samples only"),
        ("jump=9", "jump: no sample &#x27;9&#x27; in batch &#x27;batch-1&#x27; (samples: 1 to 3)"),
        ("jump=", "jump: no sample &#x27;&#x27; in batch"),
    ],
)
def test_bad_query_gets_400_naming_the_parameter(scene: dict[str, Any], query: str, message: str) -> None:
    response = login(scene["admin"]).get(url(scene["batch"], query))
    assert response.status_code == 400
    assert message in response.content.decode()


def test_jump_opens_the_nth_sample(scene: dict[str, Any]) -> None:
    s1 = scene["samples"][1]
    response = login(scene["auditor"]).get(url(scene["batch"], "jump=2&round=1"))
    assert response.status_code == 302 and response["Location"] == f"/projects/demo/samples/{s1.pk}/?round=1"
    response = login(scene["auditor"]).get(url(scene["batch"], "jump=2"), **HTMX)
    assert response["HX-Redirect"] == f"/projects/demo/samples/{s1.pk}/?round=1"


def test_htmx_gets_only_the_table(scene: dict[str, Any]) -> None:
    response = login(scene["admin"]).get(url(scene["batch"], "worst=U"), **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html and html.lstrip().startswith('<section id="samples">')
    assert html.count("<tr data-sample=") == 1
    bad = login(scene["admin"]).get(url(scene["batch"], "worst=X"), **HTMX)
    assert bad.status_code == 400 and "<html" not in bad.content.decode() and 'data-role="error"' in bad.content.decode()


def test_access(scene: dict[str, Any], charlie: Any) -> None:
    batch = scene["batch"]
    assert login(scene["alice"]).get(url(batch)).status_code == 403
    assert login(charlie).get(url(batch)).status_code == 404
    assert login(scene["admin"]).post(url(batch)).status_code == 405
    other = Project.objects.create(name="Other", slug="other")
    other_batch = Batch.objects.create(project=other, name="elsewhere")
    assert login(scene["admin"]).get(f"/projects/demo/batches/{other_batch.pk}/samples/").status_code == 404


def test_project_page_links_the_browser(scene: dict[str, Any]) -> None:
    link = f'href="{url(scene["batch"])}" data-role="browse-samples"'
    assert link in login(scene["curator"]).get("/projects/demo/").content.decode()
    assert link not in login(scene["alice"]).get("/projects/demo/").content.decode()


def big_batch(project: Project, name: str, size: int, people: list[Any]) -> Batch:
    batch = Batch.objects.create(project=project, name=name)
    passage = Passage.objects.create(project=project, external_id=name, text="Source text of the passage.")
    samples = Sample.objects.bulk_create(
        Sample(project=project, passage=passage, batch=batch, position=i, external_id=f"{name}-{i}",
               summary="Summary text here.", generator=f"gen-{i % 4}")
        for i in range(size)
    )
    for person in people:
        Assignment.objects.create(batch=batch, annotator=person, status=Assignment.Status.SUBMITTED)
        SpanAnnotation.objects.bulk_create(
            SpanAnnotation(sample=sample, annotator=person, start=0, end=7, text="Summary",
                           labels=[["Benign"], ["Questionable"], ["Unwanted", "Unwanted.Extrinsic"]][i % 3])
            for i, sample in enumerate(samples) if i % 2 == 0
        )
        SampleReview.objects.bulk_create(
            SampleReview(sample=sample, annotator=person, done=True, seconds_spent=10 + i) for i, sample in
            enumerate(samples)
        )
        flags.flag_sample(samples[3], person, round=1, kind="skip", comment="dup")
    return batch


def test_a_fixed_small_number_of_queries_whatever_the_batch_size(project: Project, alice: Any, bob: Any,
                                                                 admin_user: Any) -> None:
    counts = []
    for name, size in (("small", 5), ("large", 150)):
        batch = big_batch(project, name, size, [alice, bob])
        client = login(admin_user)
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url(batch, "flagged=1"))
        assert [row.external_id for row in rows_of(response)] == [f"{name}-3"]
        counts.append(len(queries))
    assert counts[0] == counts[1]


def test_a_batch_of_200_stays_within_the_query_budget(project: Project, alice: Any, bob: Any, admin_user: Any,
                                                      django_assert_max_num_queries: Any) -> None:
    batch = big_batch(project, "b200", 200, [alice, bob])
    client = login(admin_user)
    with django_assert_max_num_queries(16):
        response = client.get(url(batch))
    rows = rows_of(response) + rows_of(client.get(url(batch, "page=2")))  # 100 rows a page
    assert len(rows) == 200
    # By hand: even positions carry one span of each person, labels cycling B, Q, U by position; odd ones none.
    expected = ["BQU"[i % 3] if i % 2 == 0 else "C" for i in range(200)]
    assert [row.worst for row in rows] == expected
