"""Reviewers still see the stored spans of an annotator who no longer holds the round (exports list them too), and
are told so: the API's ``assigned`` is false for them and the sample page marks the name "(not assigned)".
Annotators still see only their own spans."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from annotate.models import Assignment, Batch, Membership, SpanAnnotation
from annotate.services import spans
from annotate.services.members import remove_member, unassign_annotator
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db


def page_data(client: Any, sample: Any) -> dict[str, Any]:
    html = client.get(f"/projects/demo/samples/{sample.pk}/?round=1").content.decode()
    found = re.search(r'<script id="page-data" type="application/json">(.*?)</script>', html, re.S)
    assert found, html[:500]
    return json.loads(found.group(1))


@pytest.fixture
def bob_unassigned(batch: Batch, alice: Any, bob: Any) -> dict[str, Any]:
    """Alice and bob each saved a span on the first sample; then bob was unassigned (his span stays stored)."""
    sample = batch.samples.order_by("position").first()
    kept = spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    left = spans.create_span(sample, bob, round=1, start=8, end=15, labels=["Questionable"])
    unassign_annotator(Assignment.objects.get(batch=batch, annotator=bob, round=1), confirm=True)
    return {"sample": sample, "kept": kept, "left": left}


@pytest.mark.parametrize("role", ["admin", "auditor", "curator"])
def test_reviewers_see_an_unassigned_annotators_spans_marked_as_such(
    bob_unassigned: dict[str, Any], batch: Batch, admin_user: Any, role: str
) -> None:
    sample, kept, left = bob_unassigned["sample"], bob_unassigned["kept"], bob_unassigned["left"]
    reviewer = admin_user if role == "admin" else make_user(role)
    if role != "admin":
        Membership.objects.create(project=batch.project, user=reviewer, role=role)
    client = login(reviewer)

    listed = client.get("/api/spans/", {"sample": sample.pk}).json()["results"]
    assert {(row["id"], row["annotator"], row["assigned"]) for row in listed} == {
        (kept.pk, "alice", True), (left.pk, "bob", False)
    }
    assert client.get(f"/api/spans/{left.pk}/").json()["assigned"] is False
    per_sample = client.get(f"/api/samples/{sample.pk}/spans/?round=1").json()
    assert {row["id"]: row["assigned"] for row in per_sample} == {kept.pk: True, left.pk: False}

    data = page_data(client, sample)
    assert {(span["id"], span["annotator"], span["assigned"]) for span in data["spans"]} == {
        (kept.pk, "alice", True), (left.pk, "bob (not assigned)", False)
    }
    assert data["not_assigned"] == ["bob"]
    html = client.get(f"/projects/demo/samples/{sample.pk}/?round=1").content.decode()
    assert 'bob no longer holds this round of batch-1: their spans, marked "(not assigned)", stay stored' in html


def test_an_annotator_unassigned_then_removed_from_the_project_is_not_assigned(batch: Batch, alice: Any, admin_user: Any) -> None:
    sample = batch.samples.order_by("position").first()
    cleo = make_user("cleo")
    membership = Membership.objects.create(project=batch.project, user=cleo, role=Membership.Role.ANNOTATOR)
    Assignment.objects.create(batch=batch, annotator=cleo)
    span = spans.create_span(sample, cleo, round=1, start=0, end=7, labels=["Benign"])
    unassign_annotator(Assignment.objects.get(annotator=cleo), confirm=True)  # her work stays stored
    remove_member(membership)
    client = login(admin_user)
    assert client.get(f"/api/spans/{span.pk}/").json()["assigned"] is False
    assert [s["annotator"] for s in page_data(client, sample)["spans"]] == ["cleo (not assigned)"]


def test_annotators_still_see_only_their_own_spans_and_theirs_are_assigned(
    bob_unassigned: dict[str, Any], alice: Any
) -> None:
    sample, kept = bob_unassigned["sample"], bob_unassigned["kept"]
    client = login(alice)
    listed = client.get("/api/spans/", {"sample": sample.pk}).json()["results"]
    assert [(row["id"], row["assigned"]) for row in listed] == [(kept.pk, True)]
    assert [row["id"] for row in client.get(f"/api/samples/{sample.pk}/spans/?round=1").json()] == [kept.pk]
    data = page_data(client, sample)
    assert [(span["id"], span["annotator"], span["assigned"]) for span in data["spans"]] == [(kept.pk, "alice", True)]
    assert data["not_assigned"] == []


def test_a_span_write_answers_with_assigned_true(batch: Batch, alice: Any) -> None:
    sample = batch.samples.order_by("position").first()
    client = login(alice)
    created = client.post("/api/spans/", {"sample": sample.pk, "round": 1, "start": 0, "end": 7,
                                          "labels": ["Benign"]}, content_type="application/json")
    assert created.status_code == 201 and created.json()["assigned"] is True
    changed = client.patch(f"/api/spans/{created.json()['id']}/", {"version": 1, "note": "n"},
                           content_type="application/json")
    assert changed.status_code == 200 and changed.json()["assigned"] is True
    assert SpanAnnotation.objects.get(pk=created.json()["id"]).note == "n"
