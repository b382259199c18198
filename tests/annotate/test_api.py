from __future__ import annotations

from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from annotate.models import Batch, Passage, Project, Sample, SpanAnnotation
from annotate.services import spans
from annotate.services.tokens import create_api_token
from tests.conftest import login

pytestmark = pytest.mark.django_db


def post_span(client: Client, sample: Any, **fields: Any) -> Any:
    body = {"sample": sample.pk, "start": 0, "end": 4, "labels": ["Benign"], **fields}
    return client.post("/api/spans/", body, content_type="application/json")


def test_annotator_creates_and_lists_own_spans(sample: Any, alice: Any) -> None:
    client = login(alice)
    response = post_span(client, sample, start=51, end=61, labels=["Unwanted.Intrinsic"], note="n")
    assert response.status_code == 201, response.content
    assert response.json()["labels"] == ["Unwanted", "Unwanted.Intrinsic"]
    listed = client.get(f"/api/samples/{sample.pk}/spans/").json()
    assert [s["text"] for s in listed] == [sample.summary[51:61]]


def test_annotator_cannot_see_others_round_one_spans(sample: Any, alice: Any, bob: Any) -> None:
    spans.create_span(sample, alice, round=1, start=0, end=4, labels=["Benign"])
    bob_client = login(bob)
    assert bob_client.get(f"/api/samples/{sample.pk}/spans/").json() == []
    assert bob_client.get("/api/spans/").json()["results"] == []
    alice_span = SpanAnnotation.objects.get()
    assert bob_client.get(f"/api/spans/{alice_span.pk}/").status_code == 404
    response = bob_client.patch(f"/api/spans/{alice_span.pk}/", {"version": 1, "note": "x"},
                                content_type="application/json")
    assert response.status_code == 404


def test_admin_sees_every_span_but_cannot_write_them(sample: Any, alice: Any, admin_user: Any) -> None:
    span = spans.create_span(sample, alice, round=1, start=0, end=4, labels=["Benign"])
    client = login(admin_user)
    assert len(client.get(f"/api/samples/{sample.pk}/spans/").json()) == 1
    response = client.patch(f"/api/spans/{span.pk}/", {"version": 1, "note": "x"}, content_type="application/json")
    assert response.status_code == 403
    assert post_span(client, sample).status_code == 403


def test_stale_save_gets_409_with_the_current_span(sample: Any, alice: Any) -> None:
    client = login(alice)
    span = post_span(client, sample).json()
    first = client.patch(f"/api/spans/{span['id']}/", {"version": 1, "note": "newer"}, content_type="application/json")
    assert first.status_code == 200 and first.json()["version"] == 2
    stale = client.patch(f"/api/spans/{span['id']}/", {"version": 1, "note": "older"}, content_type="application/json")
    assert stale.status_code == 409
    assert stale.json()["current"]["note"] == "newer"
    assert SpanAnnotation.objects.get().note == "newer"
    assert client.delete(f"/api/spans/{span['id']}/?version=1").status_code == 409
    assert client.delete(f"/api/spans/{span['id']}/?version=2").status_code == 204


@pytest.mark.parametrize(
    ("fields", "field"),
    [({"labels": ["Made.Up"]}, "labels"), ({"end": 99_999}, "start"), ({"start": "x"}, "start"),
     ({"source_start": 1}, "source_start")],
)
def test_bad_span_gets_400_naming_the_field(sample: Any, alice: Any, fields: dict, field: str) -> None:
    response = post_span(login(alice), sample, **fields)
    assert response.status_code == 400
    assert field in response.json()
    assert not SpanAnnotation.objects.exists()


def test_other_projects_sample_is_404(sample: Any, alice: Any, charlie: Any) -> None:
    other = Project.objects.create(name="Other", slug="other")
    batch = Batch.objects.create(project=other, name="b")
    passage = Passage.objects.create(project=other, external_id="p", text="Secret source.")
    secret = Sample.objects.create(project=other, passage=passage, batch=batch, summary="Secret.")
    assert login(alice).get(f"/api/samples/{secret.pk}/").status_code == 404
    assert login(charlie).get(f"/api/samples/{sample.pk}/").status_code == 404
    assert post_span(login(alice), secret).status_code == 400
    assert login(charlie).get("/api/projects/").json()["results"] == []


def test_anonymous_requests_are_refused(sample: Any) -> None:
    assert Client().get("/api/samples/").status_code in (401, 403)
    assert post_span(Client(), sample).status_code in (401, 403)


def test_session_post_without_csrf_is_rejected(sample: Any, alice: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = post_span(client, sample)
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]
    assert not SpanAnnotation.objects.exists()


def test_token_auth_works_without_csrf(sample: Any, alice: Any) -> None:
    _, key = create_api_token(alice, "script")
    client = Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Token {key}")
    assert post_span(client, sample).status_code == 201


def test_review_marks_done(sample: Any, alice: Any) -> None:
    response = login(alice).post(f"/api/samples/{sample.pk}/review/", {"done": True, "seconds": 30},
                                 content_type="application/json")
    assert response.status_code == 200 and response.json()["done"] is True


def test_similarity_returns_every_source_sentence(embedded: Any, sample: Any, alice: Any) -> None:
    end = sample.summary.index(".") + 1  # "Lintown's Harbour Bridge reopened on Tuesday after nine weeks of repairs."
    response = login(alice).post(f"/api/samples/{sample.pk}/similarity/", {"side": "summary", "start": 0, "end": end},
                                 content_type="application/json")
    assert response.status_code == 200
    body = response.json()
    assert len(body["sentences"]) == len(sample.passage.sentences) == 4
    # the reopening is closest to the source sentence about the bridge reopening
    assert body["closest"][0] == 0
    assert {s["shade"] for s in body["sentences"]} <= set(range(5))


def test_similarity_before_embedding_is_409(sample: Any, alice: Any) -> None:
    response = login(alice).post(f"/api/samples/{sample.pk}/similarity/", {"side": "source", "start": 0, "end": 5},
                                 content_type="application/json")
    assert response.status_code == 409


def test_similarity_out_of_range_is_400(embedded: Any, sample: Any, alice: Any) -> None:
    response = login(alice).post(f"/api/samples/{sample.pk}/similarity/", {"side": "summary", "start": 0,
                                 "end": 10_000}, content_type="application/json")
    assert response.status_code == 400 and "outside" in response.json()["start"][0]


def test_openapi_schema_is_served(alice: Any) -> None:
    response = login(alice).get("/api/schema/")
    assert response.status_code == 200
    assert b"/api/spans/" in response.content and b"/api/samples/{id}/similarity/" in response.content


def test_api_docs_load_swagger_ui_from_our_static_files(alice: Any) -> None:
    # The machines FaithLab runs on may have no internet: the docs page must not point at a CDN.
    response = login(alice).get("/api/docs/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "cdn." not in page and "unpkg" not in page
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in page
    assert finders.find("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js") is not None
