"""The sample API's ``generator``: null when it is hidden from the caller (a blind annotator), "" only for a sample
whose generator is empty, so a client can tell the two apart."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from annotate.models import Sample
from tests.conftest import login

pytestmark = pytest.mark.django_db


def generators_seen(user: Any, sample: Sample) -> tuple[Any, Any]:
    """The generator of the sample in its detail and in the project's list, as the user gets them."""
    client = login(user)
    detail = client.get(f"/api/samples/{sample.pk}/").json()
    listed = client.get("/api/samples/?project=demo").json()
    rows = listed.get("results", listed)
    (row,) = [row for row in rows if row["id"] == sample.pk]
    return detail["generator"], row["generator"]


@pytest.mark.parametrize("generator", ["model-a", ""])
def test_a_blind_annotator_gets_null_whatever_the_generator(sample: Sample, alice: Any, generator: str) -> None:
    Sample.objects.filter(pk=sample.pk).update(generator=generator)
    assert generators_seen(alice, sample) == (None, None)


def test_an_empty_generator_is_empty_text_for_those_who_see_generators(
    sample: Sample, alice: Any, admin_user: Any
) -> None:
    Sample.objects.filter(pk=sample.pk).update(generator="")
    assert generators_seen(admin_user, sample) == ("", "")
    sample.project.reveal_generator = True
    sample.project.save(update_fields=["reveal_generator"])
    assert generators_seen(alice, sample) == ("", "")


def test_a_revealed_generator_is_its_name(sample: Sample, alice: Any) -> None:
    sample.project.reveal_generator = True
    sample.project.save(update_fields=["reveal_generator"])
    assert generators_seen(alice, sample) == ("model-a", "model-a")


def test_the_schema_says_generator_is_nullable_and_why(client: Client, admin_user: Any) -> None:
    client.force_login(admin_user)
    schemas = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["components"]["schemas"]
    generator = schemas["Sample"]["properties"]["generator"]
    assert generator["type"] == "string" and generator["nullable"] is True and generator["readOnly"] is True
    assert "null: hidden from you" in generator["description"] and '"" when the sample names none' in (
        generator["description"]
    )
