"""``round`` defaults to 1 on a span or a review (the serializers' default, kept): once round 2 of the batch is open
a write that left ``round`` out goes to the frozen round 1, and its 409 names the field and the value to send.
``done`` on a review is a JSON boolean, nothing that DRF would coerce into one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotate.models import Assignment, Batch, Sample, SampleReview, SpanAnnotation
from annotate.services import rounds, spans
from tests.conftest import login

pytestmark = pytest.mark.django_db


def post_json(client: Any, url: str, body: Any) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


def finish(batch: Batch, person: Any, round: int = 1) -> None:
    for sample in batch.samples.all():
        spans.mark_sample_done(sample, person, round=round, done=True)


@pytest.fixture
def round_two(batch: Batch, alice: Any, bob: Any) -> Batch:
    """Round 1 submitted by alice and bob, round 2 open: round 1 is frozen for everyone."""
    finish(batch, alice)
    finish(batch, bob)
    rounds.open_reconciliation_round(batch)
    return batch


def test_a_span_that_left_round_out_is_told_to_send_round_2(round_two: Batch, sample: Sample, alice: Any) -> None:
    before = SpanAnnotation.objects.count()
    response = post_json(login(alice), "/api/spans/", {"sample": sample.pk, "start": 0, "end": 8, "labels": ["Benign"]})
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["frozen"] is True and body["resend_with"] == {"round": 2}
    assert "make changes in round 2" in body["detail"]
    assert 'left out "round"' in body["detail"] and 'send "round": 2' in body["detail"]
    assert SpanAnnotation.objects.count() == before
    # Sending what the answer says saves the span in round 2.
    again = post_json(login(alice), "/api/spans/", {"sample": sample.pk, "start": 0, "end": 8, "labels": ["Benign"],
                                                    **body["resend_with"]})
    assert again.status_code == 201, again.content
    assert again.json()["round"] == 2


def test_a_span_sent_to_round_1_on_purpose_gets_the_value_but_no_lecture(
    round_two: Batch, sample: Sample, alice: Any
) -> None:
    """The page always sends its round and shows the reason as it is: no API wording is added to it."""
    body = {"sample": sample.pk, "round": 1, "start": 0, "end": 8, "labels": ["Benign"]}
    response = post_json(login(alice), "/api/spans/", body)
    assert response.status_code == 409
    assert response.json()["resend_with"] == {"round": 2}
    assert "left out" not in response.json()["detail"]


def test_a_submitted_round_names_no_other_round(batch: Batch, sample: Sample, alice: Any) -> None:
    finish(batch, alice)
    response = post_json(login(alice), "/api/spans/", {"sample": sample.pk, "start": 0, "end": 8, "labels": ["Benign"]})
    assert response.status_code == 409
    assert "resend_with" not in response.json()
    assert "ask an admin to re-open it" in response.json()["detail"]


def test_a_review_that_left_round_out_is_told_to_send_round_2(round_two: Batch, sample: Sample, alice: Any) -> None:
    response = post_json(login(alice), f"/api/samples/{sample.pk}/review/", {"done": False})
    assert response.status_code == 409
    assert response.json()["resend_with"] == {"round": 2}
    assert 'send "round": 2' in response.json()["detail"]
    assert SampleReview.objects.get(sample=sample, annotator=alice, round=1).done


def test_editing_a_frozen_round_one_span_names_no_round(round_two: Batch, sample: Sample, alice: Any) -> None:
    """A span stays in its round: there is no value of round to send for it."""
    span = SpanAnnotation.objects.create(sample=sample, annotator=alice, round=1, start=0, end=8,
                                         text=sample.summary[:8], labels=["Benign"])
    response = alice_patch(alice, span.pk, {"version": span.version, "note": "late"})
    assert response.status_code == 409
    assert "resend_with" not in response.json()


def alice_patch(alice: Any, span_id: int, body: dict[str, Any]) -> Any:
    return login(alice).patch(f"/api/spans/{span_id}/", json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("done", ["yes", "true", 1, 0, "1", None, [], {"x": 1}])
def test_done_must_be_a_json_boolean(sample: Sample, alice: Any, done: Any) -> None:
    response = post_json(login(alice), f"/api/samples/{sample.pk}/review/", {"done": done})
    assert response.status_code == 400, response.content
    errors = response.json()
    assert set(errors) == {"done"}
    assert "true or false" in errors["done"][0]
    assert not SampleReview.objects.exists()


def test_done_left_out_is_required_not_false(sample: Sample, alice: Any) -> None:
    response = post_json(login(alice), f"/api/samples/{sample.pk}/review/", {"seconds": 5})
    assert response.status_code == 400
    assert set(response.json()) == {"done"}


def test_a_form_post_cannot_mark_done_by_text(sample: Sample, alice: Any) -> None:
    response = login(alice).post(f"/api/samples/{sample.pk}/review/", {"done": "on"})
    assert response.status_code == 400 and set(response.json()) == {"done"}
    assert not SampleReview.objects.exists()


@pytest.mark.parametrize("done", [True, False])
def test_true_and_false_are_still_taken(sample: Sample, alice: Any, done: bool) -> None:
    response = post_json(login(alice), f"/api/samples/{sample.pk}/review/", {"done": done, "seconds": 3})
    assert response.status_code == 200, response.content
    assert response.json()["done"] is done
    assert SampleReview.objects.get(sample=sample, annotator=alice, round=1).done is done


def test_the_service_refuses_a_done_that_is_no_boolean(sample: Sample, alice: Any) -> None:
    with pytest.raises(spans.SpanError, match="done must be true or false"):
        spans.mark_sample_done(sample, alice, round=1, done="yes")  # type: ignore[arg-type]
    assert not SampleReview.objects.exists()
    assert Assignment.objects.get(batch=sample.batch, annotator=alice).status == Assignment.Status.ASSIGNED


def test_the_schema_documents_resend_with_and_a_boolean_done(admin_user: Any) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    schemas = document["components"]["schemas"]
    assert "resend_with" in schemas["SpanConflict"]["properties"]
    assert schemas["ResendWith"]["properties"]["round"]["type"] == "integer"
    assert schemas["Review"]["properties"]["done"]["type"] == "boolean"
