"""What the span endpoints do with input they cannot use: refuse it by name, in one shape, and change nothing.

Through the API as a client calls it: a PATCH naming a field it may not change
(or one that does not exist) used to answer 200, drop the field and still bump
the version, so another tab holding that version got a stale-version 409.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
from django.test import Client

from annotate.models import Sample, SpanAnnotation
from annotate.services import labelsets, spans
from annotate.taxonomy import ALIASES, DEFAULT_TAXONOMY
from tests.conftest import login

pytestmark = pytest.mark.django_db


def post_span(client: Client, body: dict[str, Any]) -> Any:
    return client.post("/api/spans/", json.dumps(body), content_type="application/json")


def patch_span(client: Client, span_id: int, body: dict[str, Any]) -> Any:
    return client.patch(f"/api/spans/{span_id}/", json.dumps(body), content_type="application/json")


def field_errors(response: Any) -> dict[str, list[str]]:
    """The body of a 400, checked to be DRF's shape: every field at fault with a list of messages."""
    assert response.status_code == 400, (response.status_code, response.content)
    body = response.json()
    assert isinstance(body, dict) and body, body
    for field, messages in body.items():
        assert isinstance(messages, list) and messages, (field, messages)
        assert all(isinstance(message, str) and message for message in messages), (field, messages)
    return body


def stored(span: SpanAnnotation) -> tuple[Any, ...]:
    row = SpanAnnotation.objects.get(pk=span.pk)
    return row.sample_id, row.round, row.start, row.end, row.labels, row.note, row.version, row.updated_at


@pytest.fixture
def span(sample: Sample, alice: Any) -> SpanAnnotation:
    return spans.create_span(sample, alice, round=1, start=0, end=8, labels=["Benign"], note="first")


@pytest.fixture
def other_sample(sample: Sample) -> Sample:
    return Sample.objects.create(project=sample.project, passage=sample.passage, batch=sample.batch,
                                 summary="Another summary of the bridge.", position=1)


# --------------------------------------------------------------------------- fields a PATCH may not change


def test_a_patch_moving_a_span_to_another_sample_is_refused_and_leaves_the_other_tab_current(
    span: SpanAnnotation, other_sample: Sample, alice: Any
) -> None:
    before = stored(span)
    this_tab, other_tab = login(alice), login(alice)
    refused = patch_span(this_tab, span.pk, {"version": 1, "sample": other_sample.pk})
    errors = field_errors(refused)
    assert set(errors) == {"sample"}
    assert "sample is read-only" in errors["sample"][0] and "nothing was saved" in errors["sample"][0]
    assert stored(span) == before
    # The other tab still holds the current version: its save goes through.
    saved = patch_span(other_tab, span.pk, {"version": 1, "note": "from the other tab"})
    assert saved.status_code == 200, saved.content
    assert saved.json()["version"] == 2 and saved.json()["sample"] == span.sample_id


@pytest.mark.parametrize("field", ["id", "sample", "annotator", "round", "text", "source_text", "updated_at"])
def test_each_read_only_field_in_a_patch_gets_400_naming_it(span: SpanAnnotation, alice: Any, field: str) -> None:
    before = stored(span)
    response = patch_span(login(alice), span.pk, {"version": 1, "note": "changed", field: 2})
    errors = field_errors(response)
    assert list(errors) == [field]
    assert errors[field][0].startswith(f"{field} is read-only (")
    assert stored(span) == before  # the note that came with it is not saved either


def test_a_patch_with_unknown_fields_names_each_of_them_beside_other_bad_values(span: SpanAnnotation, alice: Any) -> None:
    before = stored(span)
    response = patch_span(login(alice), span.pk, {"version": 1, "colour": "red", "lables": ["Benign"], "start": "x"})
    errors = field_errors(response)
    assert set(errors) == {"colour", "lables", "start"}
    assert errors["colour"][0].startswith("unknown field 'colour'; nothing was saved")
    assert "labels" in errors["lables"][0]  # the fields it may send, to spot the typo
    assert errors["start"] == ["A valid integer is required."]
    assert stored(span) == before


# --------------------------------------------------------------------------- a PATCH that changes nothing


@pytest.mark.parametrize(
    "same",
    [
        {},
        {"note": "first"},
        {"start": 0, "end": 8, "labels": ["Benign"], "note": "first", "source_start": None, "source_end": None},
    ],
    ids=["version only", "same note", "every field as stored"],
)
def test_a_patch_with_the_stored_values_saves_nothing_and_keeps_the_version(
    span: SpanAnnotation, alice: Any, same: dict[str, Any]
) -> None:
    before = stored(span)
    response = patch_span(login(alice), span.pk, {"version": 1, **same})
    assert response.status_code == 200, response.content
    assert response.json()["version"] == 1 and response.json()["note"] == "first"
    assert stored(span) == before
    assert patch_span(login(alice), span.pk, {"version": 1, "note": "other tab"}).json()["version"] == 2


def test_labels_in_another_order_are_no_change(sample: Sample, alice: Any) -> None:
    span = spans.create_span(sample, alice, round=1, start=0, end=8, labels=["Questionable", "Benign"])
    response = patch_span(login(alice), span.pk, {"version": 1, "labels": ["Benign", "Questionable"]})
    assert response.status_code == 200 and response.json()["version"] == 1
    assert SpanAnnotation.objects.get(pk=span.pk).labels == ["Questionable", "Benign"]


def test_a_real_change_still_bumps_the_version_and_a_stale_no_change_still_gets_409(
    span: SpanAnnotation, alice: Any
) -> None:
    client = login(alice)
    changed = patch_span(client, span.pk, {"version": 1, "note": "second"})
    assert changed.status_code == 200 and changed.json()["version"] == 2
    stale = patch_span(client, span.pk, {"version": 1, "note": "second"})
    assert stale.status_code == 409 and stale.json()["current"]["version"] == 2


# --------------------------------------------------------------------------- POST with fields it does not take


@pytest.mark.parametrize(
    ("extra", "start_of_message"),
    [
        ({"colour": "red"}, "unknown field 'colour'; nothing was saved (fields you may send: end, labels, note, round,"),
        ({"version": 3}, "version is read-only ("),
        ({"id": 7}, "id is read-only ("),
        ({"text": "Lintown's"}, "text is read-only (it follows start and end"),
    ],
)
def test_a_new_span_with_a_field_the_api_does_not_take_is_refused(
    sample: Sample, alice: Any, extra: dict[str, Any], start_of_message: str
) -> None:
    body = {"sample": sample.pk, "start": 0, "end": 8, "labels": ["Benign"], **extra}
    errors = field_errors(post_span(login(alice), body))
    (field,) = extra
    assert list(errors) == [field]
    assert errors[field][0].startswith(start_of_message), errors
    assert not SpanAnnotation.objects.exists()


def test_the_documented_new_span_body_is_still_taken(sample: Sample, alice: Any) -> None:
    """The README's example, and every field the annotation page sends."""
    client = login(alice)
    assert post_span(client, {"sample": sample.pk, "start": 0, "end": 7, "labels": ["Benign"]}).status_code == 201
    page_body = {"sample": sample.pk, "round": 1, "start": 10, "end": 20, "labels": ["Questionable"], "note": "",
                 "source_start": 0, "source_end": 5}
    assert post_span(client, page_body).status_code == 201


# --------------------------------------------------------------------------- one shape for every 400


def test_every_kind_of_bad_span_input_answers_field_to_list_of_messages(
    span: SpanAnnotation, sample: Sample, alice: Any, charlie: Any
) -> None:
    client = login(alice)
    new = {"sample": sample.pk, "start": 0, "end": 4, "labels": ["Benign"]}
    answers = {
        "reversed": post_span(client, {**new, "start": 5, "end": 2}),
        "outside": post_span(client, {**new, "end": 10_000}),
        "unknown label": post_span(client, {**new, "labels": ["Nope"]}),
        "no label": post_span(client, {**new, "labels": []}),
        "half a link": post_span(client, {**new, "source_start": 3}),
        "unassigned round": post_span(client, {**new, "round": 2}),
        "no such sample": post_span(login(charlie), new),
        "missing fields": post_span(client, {"sample": sample.pk}),
        "not an object": client.post("/api/spans/", "[1, 2]", content_type="application/json"),
        "not JSON": client.post("/api/spans/", "{start: 5", content_type="application/json"),
        "patch without version": patch_span(client, span.pk, {"note": "x"}),
        "patch reversed": patch_span(client, span.pk, {"version": 1, "start": 6, "end": 2}),
        "patch not JSON": client.patch(f"/api/spans/{span.pk}/", "nope", content_type="application/json"),
        "delete without version": client.delete(f"/api/spans/{span.pk}/"),
        "delete bad version": client.delete(f"/api/spans/{span.pk}/?version=0"),
        "list bad round": client.get(f"/api/samples/{sample.pk}/spans/?round=x"),
    }
    for case, response in answers.items():
        try:
            field_errors(response)
        except AssertionError as failure:
            raise AssertionError(f"{case}: {failure}") from None
    assert SpanAnnotation.objects.count() == 1 and stored(span)[6] == 1
    assert list(field_errors(answers["not JSON"])) == ["non_field_errors"]
    assert "JSON parse error" in field_errors(answers["not JSON"])["non_field_errors"][0]


def test_the_schema_describes_the_span_endpoints_400s_as_they_are(span: SpanAnnotation, sample: Sample, alice: Any) -> None:
    client = login(alice)
    document = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths, components = document["paths"], document["components"]["schemas"]
    operations = {("/api/spans/", "post"), ("/api/spans/{id}/", "patch"), ("/api/spans/{id}/", "delete"),
                  ("/api/samples/{id}/spans/", "get")}
    shapes = [paths[path][method]["responses"]["400"]["content"]["application/json"]["schema"]
              for path, method in operations]
    assert all(shape == shapes[0] for shape in shapes)
    # The request bodies say that no other field is taken.
    assert components["SpanWrite"]["additionalProperties"] is False
    assert components["PatchedSpanUpdate"]["additionalProperties"] is False
    bodies = [
        post_span(client, {"sample": sample.pk, "start": 5, "end": 2, "labels": ["Benign"]}),
        patch_span(client, span.pk, {"version": 1, "sample": sample.pk, "round": 2}),
        client.delete(f"/api/spans/{span.pk}/"),
        client.get(f"/api/samples/{sample.pk}/spans/?round=0"),
    ]
    for response in bodies:
        jsonschema.validate(field_errors(response), shapes[0])
    with pytest.raises(jsonschema.ValidationError):  # the old shape would not pass
        jsonschema.validate({"start": "5..2 is outside a text of 249 characters"}, shapes[0])


# --------------------------------------------------------------------------- messages


def test_reversed_offsets_say_start_must_be_before_end(span: SpanAnnotation, sample: Sample, alice: Any) -> None:
    client = login(alice)
    new = {"sample": sample.pk, "start": 5, "end": 2, "labels": ["Benign"]}
    assert field_errors(post_span(client, new)) == {"start": ["start must be before end (5..2)"]}
    assert field_errors(patch_span(client, span.pk, {"version": 1, "start": 9})) == {
        "start": ["start must be before end (9..8)"]
    }
    link = {**new, "start": 0, "end": 4, "source_start": 7, "source_end": 3}
    assert field_errors(post_span(client, link)) == {"source_start": ["source_start must be before source_end (7..3)"]}
    outside = field_errors(post_span(client, {**new, "start": 2, "end": 10_000}))
    assert outside == {"start": [f"2..10000 is outside a text of {len(sample.summary)} characters"]}


def _listed_labels(response: Any) -> list[str]:
    message = field_errors(response)["labels"][0]
    match = re.fullmatch(r"unknown label 'Nope'; labels you can use: (.+)", message)
    assert match, message
    return match.group(1).split(", ")


def test_the_unknown_label_error_lists_only_labels_the_api_accepts(sample: Sample, alice: Any, admin_user: Any) -> None:
    client = login(alice)
    listed = _listed_labels(post_span(client, {"sample": sample.pk, "start": 0, "end": 4, "labels": ["Nope"]}))
    assert not set(ALIASES) & set(listed)
    assert {"Unwanted", "Unwanted.Intrinsic", "Unwanted.Extrinsic", "Questionable", "Benign"} == set(listed)
    for offset, label in enumerate(listed):
        accepted = post_span(client, {"sample": sample.pk, "start": offset, "end": offset + 3, "labels": [label]})
        assert accepted.status_code == 201, (label, accepted.content)
    # A retired label is refused too, so it is not listed either.
    retired = [dict(entry, retired=entry["name"] == "Benign") for entry in DEFAULT_TAXONOMY["labels"]]
    labelsets.save_label_set(sample.project, retired, guidelines="", note="retire Benign", author=admin_user)
    assert "Benign" not in _listed_labels(
        post_span(client, {"sample": sample.pk, "start": 0, "end": 4, "labels": ["Nope"]})
    )
