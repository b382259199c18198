"""A re-opened round stays open while the annotator fixes it: D moves on, only Submit again freezes it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Assignment, Batch, RoundReopening, Sample, SampleReview, SpanAnnotation
from annotate.services import freeze, spans
from annotate.services.pages import annotation_page_data
from tests.conftest import login

pytestmark = pytest.mark.django_db

REASON = "alice asked to fix sample 1"


def finish(batch: Batch, person: Any) -> None:
    for sample in batch.samples.all():
        spans.mark_sample_done(sample, person, round=1, done=True)


def samples_of(batch: Batch) -> list[Sample]:
    return list(batch.samples.order_by("position", "id"))


def state(batch: Batch, person: Any) -> tuple[str, bool, bool]:
    """(status, reopened, reopening still open) of the person's round 1."""
    assignment = Assignment.objects.get(batch=batch, annotator=person, round=1)
    still_open = RoundReopening.objects.filter(assignment=assignment, closed_at__isnull=True).exists()
    return assignment.status, assignment.reopened, still_open


REOPENED = (Assignment.Status.ASSIGNED, True, True)
SUBMITTED_AGAIN = (Assignment.Status.SUBMITTED, False, False)


@pytest.fixture
def reopened(batch: Batch, sample: Sample, alice: Any, admin_user: Any) -> SpanAnnotation:
    """Alice's round 1: a span on the first sample, every sample done, submitted, then re-opened by the admin."""
    span = spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    finish(batch, alice)
    freeze.reopen_round(Assignment.objects.get(batch=batch, annotator=alice, round=1), admin_user, REASON)
    return span


# --------------------------------------------------------------------------- the service


def test_d_on_a_done_sample_of_a_reopened_round_does_not_submit_it(
    batch: Batch, sample: Sample, alice: Any, reopened: SpanAnnotation
) -> None:
    spans.update_span(reopened, version=reopened.version, changes={"labels": ["Questionable"]})
    for each in samples_of(batch):  # D on every sample: each is done already, so the batch is all done
        review = spans.mark_sample_done(each, alice, round=1, done=True)
        assert review.done
        assert state(batch, alice) == REOPENED
    # Still open: the next fix saves.
    second = spans.create_span(Sample.objects.get(pk=sample.pk), alice, round=1, start=8, end=15, labels=["Benign"])
    assert second.pk


def test_submit_again_freezes_the_round_and_closes_the_reopening(
    batch: Batch, sample: Sample, alice: Any, reopened: SpanAnnotation
) -> None:
    assignment = freeze.submit_round_again(batch, alice, round=1)
    assert assignment.status == Assignment.Status.SUBMITTED and assignment.submitted_at is not None
    assert state(batch, alice) == SUBMITTED_AGAIN
    assert RoundReopening.objects.get().closed_at == assignment.submitted_at
    with pytest.raises(freeze.RoundFrozen, match="You submitted round 1 of batch-1"):
        spans.create_span(Sample.objects.get(pk=sample.pk), alice, round=1, start=8, end=15, labels=["Benign"])
    # D on a done sample of the frozen round still just answers, and changes nothing.
    assert spans.mark_sample_done(Sample.objects.get(pk=sample.pk), alice, round=1, done=True).done
    with pytest.raises(freeze.RoundFrozen):
        spans.mark_sample_done(Sample.objects.get(pk=sample.pk), alice, round=1, done=False)


def test_submit_again_with_a_sample_unmarked_during_the_reopening_is_refused_naming_it(
    batch: Batch, alice: Any, reopened: SpanAnnotation
) -> None:
    _, second, _ = samples_of(batch)
    spans.mark_sample_done(second, alice, round=1, done=False)
    with pytest.raises(freeze.SubmitError) as refused:
        freeze.submit_round_again(batch, alice, round=1)
    assert str(refused.value) == (
        "sample 2 of batch-1 (round 1) is not marked done: mark it done (D), then submit again; the round is "
        "still open"
    )
    assert refused.value.not_done == [second.pk]
    assert state(batch, alice) == REOPENED

    spans.mark_sample_done(second, alice, round=1, done=True)  # marking it done again does not submit either
    assert state(batch, alice) == REOPENED
    freeze.submit_round_again(batch, alice, round=1)
    assert state(batch, alice) == SUBMITTED_AGAIN


def test_several_samples_not_done_are_all_named(batch: Batch, alice: Any, reopened: SpanAnnotation) -> None:
    first, _, third = samples_of(batch)
    for each in (first, third):
        spans.mark_sample_done(each, alice, round=1, done=False)
    with pytest.raises(freeze.SubmitError, match=r"^samples 1, 3 of batch-1 \(round 1\) are not marked done"):
        freeze.submit_round_again(batch, alice, round=1)


def test_only_a_reopened_round_is_submitted_again(batch: Batch, alice: Any, bob: Any) -> None:
    with pytest.raises(freeze.SubmitError, match="round 1 of batch-1 is not re-opened"):
        freeze.submit_round_again(batch, bob, round=1)  # open, never submitted
    finish(batch, alice)  # the first submission is still the last D, as before
    assert state(batch, alice) == (Assignment.Status.SUBMITTED, False, False)
    with pytest.raises(freeze.RoundFrozen, match="You submitted round 1 of batch-1"):
        freeze.submit_round_again(batch, alice, round=1)
    with pytest.raises(freeze.NotAssigned, match="you have no round 2 of batch-1"):
        freeze.submit_round_again(batch, alice, round=2)


def test_the_page_says_who_reopened_the_round_and_why(
    batch: Batch, sample: Sample, alice: Any, reopened: SpanAnnotation
) -> None:
    page = annotation_page_data(Sample.objects.get(pk=sample.pk), alice, "annotator", 1)
    assert page["can_edit"] is True and page["frozen"] is None
    assert page["reopened"]["notice"] == (
        f"Round 1 re-opened by adam: {REASON}. Your changes save as you go; press Submit again when you are done."
    )
    assert page["reopened"]["submit_url"] == reverse("batch-submit", args=[batch.pk])
    html = login(alice).get(reverse("sample", args=["demo", sample.pk])).content.decode()
    assert 'data-role="submit-again"' in html and REASON in html

    freeze.submit_round_again(batch, alice, round=1)
    page = annotation_page_data(Sample.objects.get(pk=sample.pk), alice, "annotator", 1)
    assert page["reopened"] is None and "You submitted round 1 of batch-1" in page["frozen"]
    assert 'data-role="submit-again"' not in login(alice).get(reverse("sample", args=["demo", sample.pk])).content.decode()


def test_the_home_page_shows_a_reopened_round_as_open_though_every_sample_is_done(
    batch: Batch, alice: Any, reopened: SpanAnnotation
) -> None:
    home = login(alice).get("/").content.decode()
    assert 'data-role="reopened"' in home and 'data-role="next-sample"' in home
    assert 'data-role="view-submitted"' not in home


# --------------------------------------------------------------------------- the API


def submit(client: Any, batch: Batch, body: dict[str, Any] | None = None) -> Any:
    return client.post(f"/api/batches/{batch.pk}/submit/", json.dumps(body or {"round": 1}),
                       content_type="application/json")


def test_api_d_moves_on_and_submit_freezes_the_round_again(
    batch: Batch, sample: Sample, alice: Any, reopened: SpanAnnotation
) -> None:
    client = login(alice)
    relabelled = client.patch(f"/api/spans/{reopened.pk}/", json.dumps({"version": reopened.version,
                                                                        "labels": ["Questionable"]}),
                              content_type="application/json")
    assert relabelled.status_code == 200
    review = client.post(f"/api/samples/{sample.pk}/review/", json.dumps({"round": 1, "done": True}),
                         content_type="application/json")
    assert review.status_code == 200 and review.json()["done"] is True
    assert state(batch, alice) == REOPENED

    answer = submit(client, batch)
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert (body["batch"], body["round"], body["status"]) == (batch.pk, 1, "submitted") and body["submitted_at"]
    assert state(batch, alice) == SUBMITTED_AGAIN
    late = client.post("/api/spans/", json.dumps({"sample": sample.pk, "start": 8, "end": 15, "labels": ["Benign"]}),
                       content_type="application/json")
    assert late.status_code == 409 and late.json()["frozen"] is True

    again = submit(client, batch)  # frozen now: 409 with the reason, as every write to a frozen round
    assert again.status_code == 409
    assert again.json()["frozen"] is True and "You submitted round 1 of batch-1" in again.json()["detail"]


def test_api_submit_with_a_sample_not_done_is_refused_naming_it(
    batch: Batch, alice: Any, reopened: SpanAnnotation
) -> None:
    _, second, _ = samples_of(batch)
    client = login(alice)
    client.post(f"/api/samples/{second.pk}/review/", json.dumps({"round": 1, "done": False}),
                content_type="application/json")
    answer = submit(client, batch)
    assert answer.status_code == 409
    assert answer.json()["not_done"] == [second.pk]
    assert answer.json()["detail"].startswith("sample 2 of batch-1 (round 1) is not marked done")
    assert "frozen" not in answer.json()
    assert state(batch, alice) == REOPENED
    assert not SampleReview.objects.get(sample=second, annotator=alice).done


def test_api_submit_refuses_others_and_bad_input_and_changes_nothing(
    batch: Batch, alice: Any, bob: Any, charlie: Any, admin_user: Any, reopened: SpanAnnotation
) -> None:
    assert submit(login(admin_user), batch).status_code == 403
    assert submit(login(charlie), batch).status_code == 404
    bob_answer = submit(login(bob), batch)
    assert bob_answer.status_code == 409 and "is not re-opened" in bob_answer.json()["detail"]
    unknown = submit(login(alice), batch, {"round": 1, "force": True})
    assert unknown.status_code == 400 and "force" in unknown.json()
    no_round = submit(login(alice), batch, {"round": 2})
    assert no_round.status_code == 400 and no_round.json() == {"round": ["you have no round 2 of batch-1"]}
    assert login(alice).get(f"/api/batches/{batch.pk}/submit/").status_code == 405
    assert state(batch, alice) == REOPENED
