from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotate.models import Batch, Membership, Passage, Project, Sample, SpanAnnotation
from annotate.services import spans
from tests.conftest import login

pytestmark = pytest.mark.django_db
EXAMPLE = (Path(__file__).parent / "faithbench_example.json").read_bytes()
HTMX = {"HTTP_HX_REQUEST": "true"}


def sample_url(sample: Any) -> str:
    return f"/projects/{sample.project.slug}/samples/{sample.pk}/"


def page_data(response: Any) -> dict:
    html = response.content.decode()
    start = html.index('<script id="page-data" type="application/json">') + len(
        '<script id="page-data" type="application/json">'
    )
    return json.loads(html[start : html.index("</script>", start)])


def test_anonymous_is_sent_to_login(sample: Any) -> None:
    for url in ["/", "/projects/demo/", sample_url(sample)]:
        response = Client().get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_login_page_has_the_documented_fields() -> None:
    html = Client().get("/accounts/login/").content.decode()
    assert 'name="username"' in html and 'name="password"' in html


def test_home_links_the_next_unfinished_sample(batch: Any, alice: Any) -> None:
    first, second = list(batch.samples.order_by("position"))[:2]
    spans.mark_sample_done(first, alice, round=1, done=True)
    html = login(alice).get("/").content.decode()
    assert f'data-role="next-sample" href="/projects/demo/samples/{second.pk}/?round=1"' in html


def test_home_rejects_post(alice: Any) -> None:
    assert login(alice).post("/").status_code == 405


def test_sample_page_shows_text_escaped_and_own_spans_only(sample: Any, alice: Any, bob: Any) -> None:
    sample.passage.text = "<script>alert('x')</script> " + sample.passage.text
    sample.passage.save()
    spans.create_span(sample, alice, round=1, start=0, end=4, labels=["Benign"])
    alice_page = login(alice).get(sample_url(sample))
    assert alice_page.status_code == 200
    html = alice_page.content.decode()
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html
    assert 'data-role="summary"' in html and 'data-role="source"' in html
    assert len(page_data(alice_page)["spans"]) == 1
    bob_page = login(bob).get(sample_url(sample))
    assert page_data(bob_page)["spans"] == []


def test_sample_page_wrong_method_and_outsider(sample: Any, alice: Any, charlie: Any) -> None:
    assert login(alice).post(sample_url(sample)).status_code == 405
    assert login(charlie).get(sample_url(sample)).status_code == 404


def test_sample_page_bad_round_is_400(sample: Any, alice: Any) -> None:
    response = login(alice).get(sample_url(sample) + "?round=two")
    assert response.status_code == 400 and b"round" in response.content


def test_annotator_of_another_batch_gets_404(project: Any, alice: Any, bob: Any) -> None:
    other = Batch.objects.create(project=project, name="b2")
    passage = Passage.objects.create(project=project, external_id="x", text="Text.")
    sample = Sample.objects.create(project=project, passage=passage, batch=other, summary="S.")
    assert login(alice).get(sample_url(sample)).status_code == 404


def test_project_page_for_admin_annotator_outsider_and_htmx(batch: Any, admin_user: Any, alice: Any,
                                                            charlie: Any) -> None:
    admin_html = login(admin_user).get("/projects/demo/").content.decode()
    assert "Import data" in admin_html and "batch-1" in admin_html
    annotator_html = login(alice).get("/projects/demo/").content.decode()
    assert "Import data" not in annotator_html and "batch-1" in annotator_html
    assert login(charlie).get("/projects/demo/").status_code == 404
    fragment = login(admin_user).get("/projects/demo/", HTTP_HX_TARGET="progress", **HTMX).content.decode()
    assert 'id="progress"' in fragment and "<html" not in fragment
    assert login(admin_user).post("/projects/demo/").status_code == 405


def test_upload_imports_and_reports(project: Any, admin_user: Any) -> None:
    upload = SimpleUploadedFile("batch_3.json", EXAMPLE, content_type="application/json")
    response = login(admin_user).post("/projects/demo/import/", {"files": [upload]}, follow=True)
    assert "Imported 1 batch, 2 samples and 4 spans" in response.content.decode()
    assert Batch.objects.filter(project=project, name="batch_3").exists()


def test_upload_with_an_error_imports_nothing(project: Any, admin_user: Any) -> None:
    upload = SimpleUploadedFile("bad.json", b'{"samples": [{"sample_id": 1}]}')
    response = login(admin_user).post("/projects/demo/import/", {"files": [upload]}, follow=True)
    html = response.content.decode()
    assert "Nothing was imported: 2 errors." in html  # every problem of the file, not the first alone
    assert "bad.json: sample 1 (#0): missing field &#x27;source&#x27;" in html
    assert "bad.json: sample 1 (#0): missing field &#x27;summary&#x27;" in html
    assert not Sample.objects.exists()


def test_upload_htmx_variant_redirects_the_client(project: Any, admin_user: Any) -> None:
    upload = SimpleUploadedFile("batch_4.json", EXAMPLE)
    response = login(admin_user).post("/projects/demo/import/", {"files": [upload]}, **HTMX)
    assert response.status_code == 200 and response["HX-Redirect"] == "/projects/demo/"


def test_annotator_cannot_import_or_assign(project: Any, alice: Any) -> None:
    upload = SimpleUploadedFile("batch_5.json", EXAMPLE)
    assert login(alice).post("/projects/demo/import/", {"files": [upload]}).status_code == 403
    assert login(alice).post("/projects/demo/assign/", {"per_batch": 2}).status_code == 403
    assert login(alice).get("/projects/demo/import/").status_code == 405
    assert not Sample.objects.exists()


def test_admin_adds_member_and_assigns_batches(batch: Any, admin_user: Any, charlie: Any) -> None:
    client = login(admin_user)
    client.post("/projects/demo/members/", {"username": "charlie", "role": "annotator"})
    assert Membership.objects.get(user=charlie).role == "annotator"
    client.post("/projects/demo/assign/", {"per_batch": 3})
    assert batch.assignments.count() == 3
    response = client.post("/projects/demo/members/", {"username": "nobody", "role": "annotator"}, follow=True)
    assert "no user is called" in response.content.decode()


def test_staff_creates_a_project(admin_user: Any, alice: Any) -> None:
    response = login(admin_user).post("/projects/new/", {"name": "Pilot study"})
    assert response.status_code == 302
    project = Project.objects.get(slug="pilot-study")
    assert Membership.objects.get(project=project, user=admin_user).role == "admin"
    assert login(alice).post("/projects/new/", {"name": "X"}).status_code == 403
    assert login(admin_user).post("/projects/new/", {"name": "Pilot study"}).status_code == 400


def test_guidelines_list_every_label_with_hotkey(project: Any, alice: Any) -> None:
    html = login(alice).get("/projects/demo/guidelines/").content.decode()
    for name in ["Unwanted.Intrinsic", "Unwanted.Extrinsic", "Questionable", "Benign"]:
        assert name in html


def test_job_fragment_for_members_only(embedded: Any, admin_user: Any, charlie: Any) -> None:
    job = embedded.project.jobs.get()
    html = login(admin_user).get(f"/projects/demo/jobs/{job.pk}/", **HTMX).content.decode()
    assert 'data-job-status="done"' in html
    assert login(charlie).get(f"/projects/demo/jobs/{job.pk}/").status_code == 404


def test_csrf_is_required_for_page_forms(project: Any, admin_user: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    assert client.post("/projects/demo/members/", {"username": "adam", "role": "auditor"}).status_code == 403
    assert SpanAnnotation.objects.count() == 0
