"""The schema says what the server requires: a span's PATCH and DELETE need the version last read.

The schema listed ``version`` as optional for both (PATCH bodies are all
optional in drf-spectacular's "Patched" component; DELETE's query parameter was
not required) while the server answered 400 without it.
"""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Sample, SpanAnnotation
from annotate.services import spans
from tests.conftest import login

pytestmark = pytest.mark.django_db


def schema(user: Any) -> dict[str, Any]:
    return login(user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()


def test_the_schema_requires_the_version_for_patch_and_delete(admin_user: Any) -> None:
    document = schema(admin_user)
    operations = document["paths"]["/api/spans/{id}/"]
    body = operations["patch"]["requestBody"]
    assert body["required"] is True
    component = body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert document["components"]["schemas"][component]["required"] == ["version"]
    version = next(p for p in operations["delete"]["parameters"] if p["name"] == "version")
    assert version["in"] == "query" and version["required"] is True


def test_a_patch_without_the_version_is_a_400_naming_it_with_its_other_problems(sample: Sample, alice: Any) -> None:
    span = spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    client = login(alice)
    url = f"/api/spans/{span.pk}/"
    alone = client.patch(url, {"note": "x"}, content_type="application/json")
    assert alone.status_code == 400 and alone.json() == {"version": ["send the version you last read"]}
    together = client.patch(url, {"note": "x", "colour": "red"}, content_type="application/json").json()
    assert set(together) == {"version", "colour"}
    assert SpanAnnotation.objects.get(pk=span.pk).note == ""
    assert client.patch(url, {"version": 1, "note": "x"}, content_type="application/json").status_code == 200


def test_a_delete_without_the_version_is_a_400_and_with_it_deletes(sample: Sample, alice: Any) -> None:
    span = spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    client = login(alice)
    refused = client.delete(f"/api/spans/{span.pk}/")
    assert refused.status_code == 400 and list(refused.json()) == ["version"]
    assert client.delete(f"/api/spans/{span.pk}/?version=1").status_code == 204
    assert not SpanAnnotation.objects.filter(pk=span.pk).exists()
