"""A NUL character (\\u0000) in a request is a 400 naming the field, never a 500 on PostgreSQL, and changes nothing.

Pages that read their fields from ``request.POST`` (a project's name, a token's name, the label set editor, an
import's roster, ...) were 500s on PostgreSQL; config.nul_guard refuses them before the view. The API's JSON
bodies are refused by its parser (annotate.api.parsers), and by DRF's CharFields behind it, checked here field by
field rather than assumed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework import serializers

from annotate.api.pairs.serializers import BlockRequestSerializer
from annotate.api.serializers import FlagRequestSerializer, SpanUpdateSerializer, SpanWriteSerializer
from annotate.models import Batch, LabelSetVersion, Project, SpanAnnotation
from judging.api.audits.serializers import AuditRequestSerializer
from judging.api.serializers import JudgeCreateSerializer
from tests.annotate.test_labelsets import default_labels, form_of
from tests.conftest import login

NUL_PROBLEM = "contains a NUL character (\\u0000), which the database cannot store"
HTMX = {"HTTP_HX_REQUEST": "true"}


def state() -> dict[str, Any]:
    """What the refused requests below could have changed."""
    project = Project.objects.filter(slug="demo").values("name", "taxonomy", "guidelines").first()
    return {
        "projects": sorted(Project.objects.values_list("slug", flat=True)),
        "demo": project,
        "users": sorted(get_user_model().objects.values_list("username", flat=True)),
        "versions": LabelSetVersion.objects.count(),
        "batches": Batch.objects.count(),
        "spans": SpanAnnotation.objects.count(),
    }


def described_labels() -> dict[str, Any]:
    labels = default_labels()
    labels[1]["description"] = "an error\x00 of fact"
    return form_of(labels)


PAGE_POSTS = [
    ("/projects/new/", {"name": "Pilot\x00", "slug": ""}, "name"),
    ("/account/tokens/", {"name": "nightly\x00"}, "name"),
    ("/projects/demo/members/", {"username": "char\x00lie", "role": "annotator"}, "username"),
    ("/projects/demo/labels/", form_of(default_labels(), guidelines="Read\x00 the source."), "guidelines"),
    ("/projects/demo/labels/", described_labels(), "description[1]"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("url", "body", "field"), PAGE_POSTS, ids=[f"{url} {field}" for url, _, field in PAGE_POSTS])
def test_a_page_form_field_with_nul_is_a_400_naming_the_field(
    project: Project, admin_user: Any, url: str, body: dict[str, Any], field: str
) -> None:
    client = login(admin_user)
    client.raise_request_exception = True
    before = state()
    answer = client.post(url, body)
    assert answer.status_code == 400
    html = answer.content.decode().replace("&#x27;", "'")
    assert f"Field '{field}': {NUL_PROBLEM}." in html and "Nothing was changed." in html
    assert "<h1>Not accepted</h1>" in html  # the app's page, with the way back
    assert state() == before


@pytest.mark.django_db
def test_htmx_gets_a_fragment_and_the_roster_of_an_import_is_refused(project: Project, admin_user: Any) -> None:
    client = login(admin_user)
    before = state()
    upload = SimpleUploadedFile("batch_9.json", json.dumps({"samples": []}).encode())
    answer = client.post("/projects/demo/import/", {"files": upload, "roster": "Ana,B\x00o"}, **HTMX)
    assert answer.status_code == 400
    fragment = answer.content.decode().replace("&#x27;", "'")
    assert fragment == (f'<p class="error" role="alert" data-role="refusal">Nothing was changed. '
                        f"Field 'roster': {NUL_PROBLEM}.</p>")
    assert state() == before


@pytest.mark.django_db
def test_a_query_parameter_with_nul_is_refused_and_an_upload_name_loses_it(batch: Batch, admin_user: Any) -> None:
    client = login(admin_user)
    searched = client.get(f"/projects/demo/batches/{batch.pk}/samples/", {"q": "bridge\x00"})
    assert searched.status_code == 400 and NUL_PROBLEM in searched.content.decode()
    # An upload's name becomes a batch's name: Django's multipart parser drops NUL from it, so it is stored without.
    one_sample = {"samples": [{"sample_id": 0, "source": "The bridge closed. It opens in May.",
                               "summary": "The bridge opens in May.", "metadata": {"summarizer": "g"}}]}
    upload = SimpleUploadedFile("batch\x00_9.json", json.dumps(one_sample).encode())
    client.post("/projects/demo/import/", {"files": upload})
    assert list(Batch.objects.exclude(pk=batch.pk).values_list("name", flat=True)) == ["batch_9"]


@pytest.mark.django_db
def test_the_api_answers_its_own_shape_for_form_fields_with_nul(sample: Any, alice: Any) -> None:
    client = login(alice)
    answer = client.post("/api/spans/", {"sample": sample.pk, "start": 0, "end": 4, "labels": "Benign",
                                         "note": "see\x00 source"})
    assert answer.status_code == 400
    assert answer.json() == {"note": [NUL_PROBLEM]}
    listed = client.get("/api/pairs/next/", {"project": ["demo", "x\x00"]})
    assert listed.status_code == 400 and listed.json() == {"project": [f"project[1]: {NUL_PROBLEM}"]}
    assert not SpanAnnotation.objects.exists()


def _text_fields(serializer: serializers.Serializer) -> list[tuple[str, Any]]:
    """Each field of a request serializer that takes text, with a value holding NUL."""
    found: list[tuple[str, Any]] = []
    for name, field in serializer.fields.items():
        if field.read_only:
            continue
        if isinstance(field, serializers.ListField) and isinstance(field.child, serializers.CharField):
            found.append((name, ["a\x00b"]))
        elif isinstance(field, serializers.CharField | serializers.ChoiceField):
            found.append((name, "a\x00b"))
        else:
            assert not isinstance(field, serializers.JSONField | serializers.DictField), (
                f"{type(serializer).__name__}.{name} takes JSON: DRF does not refuse NUL in it; check it here")
    return found


WRITE_SERIALIZERS = [SpanWriteSerializer, SpanUpdateSerializer, FlagRequestSerializer, BlockRequestSerializer,
                     AuditRequestSerializer, JudgeCreateSerializer]


@pytest.mark.parametrize("serializer_class", WRITE_SERIALIZERS, ids=lambda cls: cls.__name__)
def test_every_text_field_of_the_apis_write_bodies_refuses_nul(serializer_class: type) -> None:
    fields = _text_fields(serializer_class())
    assert fields, f"{serializer_class.__name__} takes no text: take it off the list"
    for name, value in fields:
        serializer = serializer_class(data={name: value})
        assert not serializer.is_valid()
        assert name in serializer.errors, (serializer_class.__name__, name, serializer.errors)
        assert "Null characters are not allowed" in json.dumps(serializer.errors[name]) or \
            "is not a valid choice" in json.dumps(serializer.errors[name])


@pytest.mark.django_db
def test_a_json_span_note_with_nul_is_refused_by_the_parser_as_a_form_field_is(sample: Any, alice: Any) -> None:
    body = {"sample": sample.pk, "start": 0, "end": 4, "labels": ["Benign"], "note": "see\x00 source"}
    answer = login(alice).post("/api/spans/", json.dumps(body), content_type="application/json")
    assert answer.status_code == 400
    assert answer.json() == {"note": [NUL_PROBLEM]}
    assert not SpanAnnotation.objects.exists()
