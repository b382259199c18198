"""``/api/spans/`` filters by project, sample and round, inside what the caller may see: an annotator still sees
only their own spans (never another's round-1 work), reviewers every span of their projects. A project or sample
the caller may not see answers the 404 of one that does not exist, as ``/api/samples/?project=`` and
``/api/pairs/?project=`` do; a bad value is a 400 naming the parameter. Reading a project's spans costs the same
few queries whatever their number."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotate.models import Assignment, Batch, Membership, Passage, Project, Sample, SpanAnnotation
from annotate.services import rounds, spans
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db


def ids(response: Any) -> set[int]:
    assert response.status_code == 200, response.content
    return {row["id"] for row in response.json()["results"]}


def add_span(sample: Sample, user: Any, round: int = 1, start: int = 0, end: int = 8) -> SpanAnnotation:
    return SpanAnnotation.objects.create(sample=sample, annotator=user, round=round, start=start, end=end,
                                         text=sample.summary[start:end], labels=["Benign"])


@pytest.fixture
def other_project(alice: Any, admin_user: Any) -> Sample:
    """A second span project where alice annotates too; its one sample."""
    project = Project.objects.create(name="Other", slug="other")
    Membership.objects.create(project=project, user=alice, role=Membership.Role.ANNOTATOR)
    batch = Batch.objects.create(project=project, name="o-1")
    passage = Passage.objects.create(project=project, external_id="op", text="Other source text here.")
    sample = Sample.objects.create(project=project, passage=passage, batch=batch, position=0, external_id="o0",
                                   summary="Other summary text here.", generator="model-z")
    Assignment.objects.create(batch=batch, annotator=alice)
    return sample


def test_an_annotator_filters_their_own_spans_by_project_sample_and_round(
    batch: Batch, alice: Any, bob: Any, other_project: Sample
) -> None:
    first, second = batch.samples.order_by("position")[:2]
    mine = add_span(first, alice)
    mine_too = add_span(second, alice)
    elsewhere = add_span(other_project, alice)
    add_span(first, bob)  # bob's round-1 work: never alice's to see
    client = login(alice)
    assert ids(client.get("/api/spans/")) == {mine.pk, mine_too.pk, elsewhere.pk}
    assert ids(client.get("/api/spans/", {"project": "demo"})) == {mine.pk, mine_too.pk}
    assert ids(client.get("/api/spans/", {"project": "demo", "sample": first.pk})) == {mine.pk}
    assert ids(client.get("/api/spans/", {"sample": other_project.pk})) == {elsewhere.pk}
    assert ids(client.get("/api/spans/", {"project": "demo", "round": 2})) == set()


def test_round_two_shows_an_annotator_their_own_copies_only(batch: Batch, sample: Sample, alice: Any, bob: Any) -> None:
    spans.create_span(sample, alice, round=1, start=0, end=8, labels=["Benign"])
    spans.create_span(sample, bob, round=1, start=9, end=15, labels=["Questionable"])
    for person in (alice, bob):
        for each in batch.samples.all():
            spans.mark_sample_done(each, person, round=1, done=True)
    rounds.open_reconciliation_round(batch)
    listed = login(alice).get("/api/spans/", {"project": "demo", "round": 2}).json()["results"]
    assert [row["annotator"] for row in listed] == ["alice"]
    assert {row["round"] for row in listed} == {2}


def test_a_reviewer_reads_a_projects_spans_in_one_call(batch: Batch, alice: Any, bob: Any, admin_user: Any) -> None:
    samples = list(batch.samples.order_by("position"))
    made = {add_span(each, person).pk for each in samples for person in (alice, bob)}
    auditor = make_user("audrey")
    Membership.objects.create(project=batch.project, user=auditor, role=Membership.Role.AUDITOR)
    for reviewer in (admin_user, auditor):
        assert ids(login(reviewer).get("/api/spans/", {"project": "demo", "limit": 1000})) == made
        by_sample = login(reviewer).get("/api/spans/", {"sample": samples[0].pk}).json()["results"]
        assert {row["annotator"] for row in by_sample} == {"alice", "bob"}


@pytest.mark.parametrize("slug", ["nope", "other"])
def test_a_project_one_may_not_see_is_the_404_of_none(
    batch: Batch, bob: Any, other_project: Sample, slug: str
) -> None:
    """bob has no role in "other": he gets the answer of a slug that names nothing, so its existence stays hidden."""
    response = login(bob).get("/api/spans/", {"project": slug})
    assert response.status_code == 404
    assert response.json() == {"detail": "No such project"}


def test_a_sample_one_may_not_see_is_the_404_of_none(batch: Batch, bob: Any, other_project: Sample) -> None:
    hidden = login(bob).get("/api/spans/", {"sample": other_project.pk})
    missing = login(bob).get("/api/spans/", {"sample": other_project.pk + 1000})
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json() == {"detail": "No such sample"}


def test_a_pairs_project_is_named_as_such_to_its_members(two_item_pairs: Project, alice: Any) -> None:
    response = login(alice).get("/api/spans/", {"project": "pairs"})
    assert response.status_code == 400
    assert "'pairs' is a pairs project" in response.json()["project"][0]


@pytest.mark.parametrize(
    ("query", "fields"),
    [
        ({"project": ""}, {"project"}),
        ({"sample": "x"}, {"sample"}),
        ({"sample": "0"}, {"sample"}),
        ({"round": "0", "sample": "²"}, {"round", "sample"}),
        ({"round": ""}, {"round"}),
        ({"round": "99999"}, {"round"}),
    ],
)
def test_a_bad_filter_is_a_400_naming_each_parameter(batch: Batch, alice: Any, query: dict, fields: set) -> None:
    response = login(alice).get("/api/spans/", query)
    assert response.status_code == 400, response.content
    assert set(response.json()) == fields


def test_reading_a_projects_spans_costs_the_same_queries_for_10_or_1000(
    batch: Batch, alice: Any, bob: Any, admin_user: Any
) -> None:
    samples = list(batch.samples.order_by("position"))

    def queries_for(count: int) -> tuple[int, int]:
        SpanAnnotation.objects.all().delete()
        SpanAnnotation.objects.bulk_create([
            SpanAnnotation(sample=samples[i % len(samples)], annotator=(alice, bob)[i % 2], round=1,
                           start=0, end=4, text="text", labels=["Benign"], note=str(i))
            for i in range(count)
        ])
        client = login(admin_user)
        client.get("/api/spans/", {"project": "demo", "limit": 1})  # the session and the user, read once
        with CaptureQueriesContext(connection) as captured:
            response = client.get("/api/spans/", {"project": "demo", "round": 1, "limit": 1000})
        assert response.status_code == 200 and len(response.json()["results"]) == count
        return len(captured), count

    few, _ = queries_for(10)
    many, listed = queries_for(1000)
    assert listed == 1000
    assert many == few, f"{few} queries for 10 spans, {many} for 1000"
    assert many <= 8, many  # session, user, project, role, count, page: 6 today


def test_the_schema_documents_the_span_filters(admin_user: Any) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operation = document["paths"]["/api/spans/"]["get"]
    names = {parameter["name"] for parameter in operation["parameters"] if parameter["in"] == "query"}
    assert {"project", "sample", "round", "limit", "offset"} <= names
    assert {"400", "404"} <= set(operation["responses"])
