"""A gold label goes stale by the roster curation uses: only changes to spans that count (the round's submitters,
and a submitter whose round an admin re-opened) mark it stale; a newly assigned annotator at work does not."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Assignment, Batch, Membership
from annotate.services import freeze, rounds, spans
from annotate.services.members import assign_annotator
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db


def finish_round_one(batch: Batch, *people: Any) -> None:
    for person in people:
        for sample in batch.samples.all():
            spans.mark_sample_done(sample, person, round=1, done=True)


@pytest.fixture
def gold_from_alice(batch: Batch, alice: Any, bob: Any, admin_user: Any) -> dict[str, Any]:
    """Alice and bob submitted round 1; the first sample's gold label is built from alice's span."""
    first = batch.samples.order_by("position").first()
    span = spans.create_span(first, alice, round=1, start=0, end=7, labels=["Benign"])
    finish_round_one(batch, alice, bob)
    rounds.adjudicate_sample(first, admin_user, span_ids=[span.pk])
    assert freeze.stale_gold_samples(batch.project) == {}
    return {"sample": first, "span": span}


def test_a_newly_assigned_annotator_at_work_leaves_the_gold_label_current(
    batch: Batch, gold_from_alice: dict[str, Any], admin_user: Any
) -> None:
    first = gold_from_alice["sample"]
    carol = make_user("carol")
    Membership.objects.create(project=batch.project, user=carol, role=Membership.Role.ANNOTATOR)
    assign_annotator(batch, carol.pk, round=1)
    # carol has not submitted round 1: curation does not use her span, so the gold label is still current.
    assert login(carol).post(
        "/api/spans/", {"sample": first.pk, "round": 1, "start": 0, "end": 7, "labels": ["Unwanted.Intrinsic"]},
        content_type="application/json",
    ).status_code == 201
    assert freeze.stale_gold_samples(batch.project) == {}
    assert freeze.stale_gold_samples(batch.project, sample_id=first.pk) == {}
    assert login(admin_user).get(f"/api/samples/{first.pk}/gold/").json()["stale"] is False

    # Once she submits, her span counts in curation, and it was written after the gold label was decided.
    finish_round_one(batch, carol)
    assert Assignment.objects.get(batch=batch, annotator=carol, round=1).status == Assignment.Status.SUBMITTED
    assert freeze.stale_gold_samples(batch.project)[first.pk].startswith("spans changed on ")


def test_a_reopened_submitter_who_edits_a_span_marks_the_gold_label_stale(
    batch: Batch, gold_from_alice: dict[str, Any], alice: Any, bob: Any, admin_user: Any
) -> None:
    first = gold_from_alice["sample"]
    freeze.reopen_round(Assignment.objects.get(batch=batch, annotator=bob, round=1), admin_user, "look again")
    # bob's re-opened round is no submission (he counts in no figure meanwhile), but his edit still makes the gold
    # label stale: it was built while his round-1 work counted.
    spans.create_span(first, bob, round=1, start=8, end=15, labels=["Questionable"])
    stale = freeze.stale_gold_samples(batch.project)
    assert list(stale) == [first.pk] and stale[first.pk].startswith("spans changed on ")
    assert login(admin_user).get(f"/api/samples/{first.pk}/gold/").json()["stale"] is True


def test_a_span_of_another_round_leaves_a_round_one_gold_label_current(
    batch: Batch, gold_from_alice: dict[str, Any], alice: Any, bob: Any
) -> None:
    rounds.open_reconciliation_round(batch)
    first = gold_from_alice["sample"]
    spans.create_span(first, alice, round=2, start=8, end=15, labels=["Questionable"])
    assert freeze.stale_gold_samples(batch.project) == {}
