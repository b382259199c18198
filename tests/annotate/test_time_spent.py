"""The time an annotator spends on a sample: every visit counts once, also one left by [ / ], a link, a reload or
closing the tab (the page sends it to POST /api/samples/<id>/time/), not only the visit that ends with D.

The time of a visit changes nothing else: not the done mark, not the round's submission, never a frozen round."""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotate.models import Assignment, Batch, Sample, SampleReview
from annotate.services import progress, rounds, spans
from tests.conftest import login

pytestmark = pytest.mark.django_db


def post_time(user: Any, sample: Sample, body: Any) -> Any:
    return login(user).post(f"/api/samples/{sample.pk}/time/", json.dumps(body), content_type="application/json")


def review_of(sample: Sample, user: Any, round: int = 1) -> SampleReview | None:
    return SampleReview.objects.filter(sample=sample, annotator=user, round=round).first()


def test_the_time_of_a_visit_left_without_d_is_added_and_marks_nothing(sample: Sample, alice: Any) -> None:
    first = post_time(alice, sample, {"round": 1, "seconds": 8})
    assert first.status_code == 200, first.content
    assert first.json() == {"sample": sample.pk, "round": 1, "done": False, "seconds_spent": 8}
    assert post_time(alice, sample, {"round": 1, "seconds": 2}).json()["seconds_spent"] == 10
    # D on a later visit adds its own time to the same review, as before.
    review = spans.mark_sample_done(sample, alice, round=1, done=True, seconds=1)
    assert (review.done, review.seconds_spent) == (True, 11)
    # Time after D leaves the sample done.
    assert post_time(alice, sample, {"round": 1, "seconds": 3}).json() == {
        "sample": sample.pk, "round": 1, "done": True, "seconds_spent": 14}
    assert (review_of(sample, alice).done, review_of(sample, alice).seconds_spent) == (True, 14)


def test_time_on_the_last_open_sample_never_submits_the_round(batch: Batch, alice: Any) -> None:
    first, *others = batch.samples.order_by("position")
    for each in others:
        spans.mark_sample_done(each, alice, round=1, done=True)
    assert post_time(alice, first, {"round": 1, "seconds": 5}).status_code == 200
    assignment = Assignment.objects.get(batch=batch, annotator=alice, round=1)
    assert assignment.status == Assignment.Status.ASSIGNED and not review_of(first, alice).done


def test_a_frozen_round_stores_no_time(batch: Batch, sample: Sample, alice: Any, bob: Any) -> None:
    for person in (alice, bob):
        for each in batch.samples.all():
            spans.mark_sample_done(each, person, round=1, done=True, seconds=4)
    response = post_time(alice, sample, {"round": 1, "seconds": 30})
    assert response.status_code == 409
    assert response.json()["frozen"] is True and "resend_with" not in response.json()
    assert "You submitted round 1 of batch-1" in response.json()["detail"]
    assert review_of(sample, alice).seconds_spent == 4
    # Round 1 is frozen for everyone once round 2 opens; the time of a round-1 visit is not moved to round 2.
    rounds.open_reconciliation_round(batch)
    assert post_time(bob, sample, {"round": 1, "seconds": 30}).status_code == 409
    assert review_of(sample, bob).seconds_spent == 4 and review_of(sample, bob, round=2) is None
    assert post_time(bob, sample, {"round": 2, "seconds": 6}).json()["seconds_spent"] == 6


def test_time_on_imported_submitted_work_adds_no_review_that_would_undo_it(sample: Sample, alice: Any) -> None:
    """Imported work is submitted without reviews, so its samples count as done: a review row marked not done,
    added for the time, would turn one into not done."""
    Assignment.objects.filter(annotator=alice).update(status=Assignment.Status.SUBMITTED)
    assert post_time(alice, sample, {"round": 1, "seconds": 12}).status_code == 409
    assert review_of(sample, alice) is None
    assert progress.counts_as_done(None, submitted=True)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"round": 1}, "seconds"),
        ({"round": 1, "seconds": 86401}, "seconds"),
        ({"round": 1, "seconds": -1}, "seconds"),
        ({"round": 1, "seconds": "lots"}, "seconds"),
        ({"round": 1, "seconds": 5, "done": True}, "done"),
        ({"round": 3, "seconds": 5}, "round"),
    ],
)
def test_bad_time_is_refused_and_stores_nothing(sample: Sample, alice: Any, body: dict[str, Any], field: str) -> None:
    response = post_time(alice, sample, body)
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert review_of(sample, alice) is None


def test_only_the_batch_annotator_may_add_time(sample: Sample, admin_user: Any, charlie: Any) -> None:
    assert post_time(charlie, sample, {"round": 1, "seconds": 5}).status_code == 404
    assert post_time(admin_user, sample, {"round": 1, "seconds": 5}).status_code == 403
    assert not SampleReview.objects.exists()


def test_the_page_knows_where_to_send_the_time(sample: Sample, alice: Any) -> None:
    html = login(alice).get(f"/projects/{sample.project.slug}/samples/{sample.pk}/").content.decode()
    assert f'"time": "/api/samples/{sample.pk}/time/"' in html


def test_the_schema_documents_the_time_endpoint(admin_user: Any) -> None:
    schema = json.loads(login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content)
    operation = schema["paths"]["/api/samples/{id}/time/"]["post"]
    assert set(operation["responses"]) >= {"200", "409"}
    body = schema["components"]["schemas"]["TimeSpent"]
    assert body["required"] == ["seconds"] and body["properties"]["seconds"]["maximum"] == 86400
