"""A span POST that repeats a stored span's offsets and labels with another note or link is refused, not dropped."""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotate.models import Sample, SpanAnnotation
from annotate.services import spans
from tests.conftest import login

pytestmark = pytest.mark.django_db


def post_json(client: Any, body: dict[str, Any]) -> Any:
    return client.post("/api/spans/", json.dumps(body), content_type="application/json")


def stored(sample: Sample, alice: Any) -> list[tuple[Any, ...]]:
    return list(
        SpanAnnotation.objects.filter(sample=sample, annotator=alice)
        .order_by("pk")
        .values_list("pk", "note", "source_start", "source_end", "version")
    )


def test_a_true_repeat_still_answers_200_with_the_stored_span(sample: Sample, alice: Any) -> None:
    client = login(alice)
    body = {"sample": sample.pk, "start": 0, "end": 7, "labels": ["Benign"], "note": "fine",
            "source_start": 4, "source_end": 10}
    first = post_json(client, body)
    again = post_json(client, {**body, "labels": ["Benign"]})
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"] and again.json()["note"] == "fine"
    # An absent note is the empty note: a repeat of a span saved without one.
    bare = {"sample": sample.pk, "start": 8, "end": 12, "labels": ["Questionable"]}
    assert post_json(client, bare).status_code == 201
    assert post_json(client, {**bare, "note": ""}).status_code == 200


def test_another_note_gets_409_naming_the_span_to_edit_and_nothing_is_stored(sample: Sample, alice: Any) -> None:
    client = login(alice)
    body = {"sample": sample.pk, "start": 0, "end": 7, "labels": ["Benign"], "note": "first thought"}
    first = post_json(client, body)
    span_id = first.json()["id"]
    before = stored(sample, alice)

    refused = post_json(client, {**body, "note": "second thought"})

    assert refused.status_code == 409
    answer = refused.json()
    assert answer["existing"] == span_id
    assert f"span {span_id} already has these offsets and labels with a different note or source link" in answer[
        "detail"
    ]
    assert f"edit span {span_id} (PATCH it with its version)" in answer["detail"]
    assert answer["current"]["id"] == span_id and answer["current"]["note"] == "first thought"
    assert "frozen" not in answer
    assert stored(sample, alice) == before == [(span_id, "first thought", None, None, 1)]


def test_another_source_link_gets_409_too(sample: Sample, alice: Any) -> None:
    client = login(alice)
    body = {"sample": sample.pk, "start": 0, "end": 7, "labels": ["Unwanted.Extrinsic"]}
    span_id = post_json(client, {**body, "source_start": 4, "source_end": 10}).json()["id"]
    for other in ({"source_start": 4, "source_end": 11}, {"source_start": None, "source_end": None}):
        refused = post_json(client, {**body, **other})
        assert refused.status_code == 409 and refused.json()["existing"] == span_id
    assert stored(sample, alice) == [(span_id, "", 4, 10, 1)]


def test_the_service_raises_span_exists_with_the_stored_span(sample: Sample, alice: Any) -> None:
    kept = spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"], note="a")
    with pytest.raises(spans.SpanExists) as refused:
        spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"], note="b")
    assert refused.value.existing.pk == kept.pk
    assert SpanAnnotation.objects.filter(sample=sample).count() == 1


def test_the_schema_describes_the_409(client: Any, alice: Any) -> None:
    client.force_login(alice)
    schema = json.loads(client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content)
    create = schema["paths"]["/api/spans/"]["post"]["responses"]
    assert "existing" in create["409"]["description"] and "PATCH" in create["409"]["description"]
    body = create["409"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert schema["components"]["schemas"][body]["properties"]["existing"]["type"] == "integer"
