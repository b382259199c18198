"""A span write with several faults is refused once, naming every field at fault, as the judge, pair judgement,
audit, agreement and export endpoints answer; nothing is written. Before, ``POST /api/spans/`` named only the
first fault the service met (``start``), and a body with an unknown field named only that field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from annotate.models import Sample, SpanAnnotation
from annotate.services import spans
from tests.conftest import login

pytestmark = pytest.mark.django_db


def post_span(client: Client, body: dict[str, Any]) -> Any:
    return client.post("/api/spans/", json.dumps(body), content_type="application/json")


def patch_span(client: Client, span_id: int, body: dict[str, Any]) -> Any:
    return client.patch(f"/api/spans/{span_id}/", json.dumps(body), content_type="application/json")


def refusal(response: Any) -> dict[str, list[str]]:
    """A 400 in the API's one shape: field -> non-empty list of messages."""
    assert response.status_code == 400, (response.status_code, response.content)
    body = response.json()
    assert body and all(isinstance(messages, list) and messages for messages in body.values()), body
    return body


def spans_stored() -> list[tuple[Any, ...]]:
    return list(SpanAnnotation.objects.order_by("pk").values_list("pk", "start", "end", "labels", "note", "version"))


def test_a_new_span_with_several_faults_names_every_one_and_saves_nothing(sample: Sample, alice: Any) -> None:
    body = {"sample": sample.pk, "start": 5, "end": 2, "labels": ["Nope"], "source_start": 3}
    errors = refusal(post_span(login(alice), body))
    assert set(errors) == {"start", "labels", "source_start"}
    assert "start must be before end (5..2)" in errors["start"][0]
    assert "Nope" in " ".join(errors["labels"])
    assert "source_end" in errors["source_start"][0]
    assert not SpanAnnotation.objects.exists()


def test_an_unknown_field_comes_with_the_values_at_fault(sample: Sample, alice: Any) -> None:
    body = {"sample": sample.pk, "start": 5, "end": 2, "labels": ["Nope"], "colour": "red"}
    errors = refusal(post_span(login(alice), body))
    assert set(errors) == {"colour", "start", "labels"}
    assert "unknown field 'colour'" in errors["colour"][0]
    assert not SpanAnnotation.objects.exists()


def test_a_bad_type_and_a_bad_value_come_in_one_answer(sample: Sample, alice: Any) -> None:
    """``end`` is no number (the serializer's refusal); the labels are still checked against the taxonomy."""
    body = {"sample": sample.pk, "start": 0, "end": "x", "labels": ["Nope"], "round": 9}
    errors = refusal(post_span(login(alice), body))
    assert set(errors) == {"end", "labels", "round"}
    assert "not assigned to round 9" in errors["round"][0]
    assert not SpanAnnotation.objects.exists()


def test_a_span_on_no_sample_names_the_sample_beside_the_other_faults(sample: Sample, alice: Any) -> None:
    missing = Sample.objects.order_by("-pk").first().pk + 1000
    errors = refusal(post_span(login(alice), {"sample": missing, "start": 0, "end": 4, "labels": ["Benign"],
                                              "version": 3}))
    assert set(errors) == {"sample", "version"}
    assert errors["sample"] == ["no such sample"]


def test_a_good_span_is_still_saved(sample: Sample, alice: Any) -> None:
    response = post_span(login(alice), {"sample": sample.pk, "start": 0, "end": 8, "labels": ["Benign"],
                                        "source_start": 4, "source_end": 17})
    assert response.status_code == 201, response.content
    assert response.json()["text"] == sample.summary[0:8]
    assert response.json()["source_text"] == sample.passage.text[4:17]


def test_an_admin_is_told_they_may_not_write_before_what_the_span_lacks(sample: Sample, admin_user: Any) -> None:
    response = post_span(login(admin_user), {"sample": sample.pk, "start": 5, "end": 2, "labels": ["Nope"]})
    assert response.status_code == 403
    assert not SpanAnnotation.objects.exists()


def test_a_change_with_several_faults_names_every_one_and_changes_nothing(sample: Sample, alice: Any) -> None:
    span = spans.create_span(sample, alice, round=1, start=0, end=8, labels=["Benign"], note="first")
    before = spans_stored()
    body = {"version": span.version, "start": 9, "end": 3, "labels": ["Nope"], "sample": sample.pk, "colour": 1}
    errors = refusal(patch_span(login(alice), span.pk, body))
    assert set(errors) == {"start", "labels", "sample", "colour"}
    assert "sample is read-only" in errors["sample"][0]
    assert spans_stored() == before


def test_a_change_without_its_version_still_gets_its_values_checked(sample: Sample, alice: Any) -> None:
    span = spans.create_span(sample, alice, round=1, start=0, end=8, labels=["Benign"])
    before = spans_stored()
    errors = refusal(patch_span(login(alice), span.pk, {"labels": ["Nope"], "source_end": 3}))
    assert set(errors) == {"version", "labels", "source_start"}
    assert spans_stored() == before


def test_the_service_names_every_fault_to_any_caller(sample: Sample, alice: Any) -> None:
    with pytest.raises(spans.SpanError) as refused:
        spans.create_span(sample, alice, round=1, start=-1, end=4, labels=[], source_start=9, source_end=2)
    assert set(refused.value.problems) == {"start", "labels", "source_start"}
    assert refused.value.field == "start"  # the first, for callers that show one message
    assert not SpanAnnotation.objects.exists()
