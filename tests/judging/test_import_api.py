"""The judgement import API without a file: 400 naming the field `file` (never 415), nothing written; the schema
still says multipart/form-data and 400."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotate.models import Batch
from judging.models import Judge, Judgement, JudgeRun
from tests.conftest import login

URL = "/api/projects/demo/judgements/import/"
NO_FILE = "No file was sent: send one or more JSONL files as the field 'file' of a multipart/form-data body."


@pytest.mark.django_db
@pytest.mark.parametrize(("body", "content_type"), [
    ("{}", "application/json"),
    ('{"flag": true}', "application/json"),
    ('{"file": "{\\"sample\\": \\"0\\", \\"judge\\": \\"j\\", \\"score\\": 3}"}', "application/json"),
    ("flag=true", "application/x-www-form-urlencoded"),
    ('{"sample": "0", "judge": "j", "score": 3}', "application/jsonl"),
    ("not json at all {", "text/plain"),
    ("", "application/json"),
])
def test_a_body_without_a_file_gets_400_naming_file_and_nothing_is_written(
    batch: Batch, admin_user: Any, body: str, content_type: str
) -> None:
    answer = login(admin_user).post(URL, body, content_type=content_type)
    assert answer.status_code == 400
    assert answer.json() == {"file": [NO_FILE]}
    assert not Judge.objects.exists() and not JudgeRun.objects.exists() and not Judgement.objects.exists()


@pytest.mark.django_db
def test_multipart_without_a_file_or_with_text_in_its_place_is_named_too(batch: Batch, admin_user: Any) -> None:
    client = login(admin_user)
    assert client.post(URL, {"flag": "true"}).json() == {"file": [NO_FILE]}
    text_field = client.post(URL, {"file": '{"sample": "0", "judge": "j", "score": 3}'})
    assert text_field.status_code == 400
    assert text_field.json() == {
        "file": ["'file' must be a file part of a multipart/form-data body (a JSONL file), not a text field."]}
    assert not Judgement.objects.exists()
    # ... and a real file still imports.
    ok = client.post(URL, {"file": SimpleUploadedFile("a.jsonl", b'{"sample": "0", "judge": "j", "score": 3}')})
    assert ok.status_code == 201 and ok.json()["judgements"] == 1


@pytest.mark.django_db
def test_roles_still_come_first(batch: Batch, alice: Any, charlie: Any) -> None:
    assert login(alice).post(URL, "{}", content_type="application/json").status_code == 403
    assert login(charlie).post(URL, "{}", content_type="application/json").status_code == 404
    assert Client().post(URL, "{}", content_type="application/json").status_code == 401


@pytest.mark.django_db
def test_the_schema_still_describes_a_multipart_body_and_the_400(client: Client, admin_user: Any) -> None:
    client.force_login(admin_user)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operation = schema["paths"]["/api/projects/{slug}/judgements/import/"]["post"]
    assert set(operation["requestBody"]["content"]) == {"multipart/form-data"}
    assert {"201", "400", "401", "403", "404", "409"} == set(operation["responses"])  # 409: imported before
    assert "415" not in operation["responses"]
    body = operation["requestBody"]["content"]["multipart/form-data"]["schema"]
    reference = body["$ref"].rsplit("/", 1)[-1]
    assert "file" in schema["components"]["schemas"][reference]["required"]
    assert operation["responses"]["400"]["content"]["application/json"]["schema"]["$ref"].endswith("/ImportErrors")
    assert "no file was sent" in operation["responses"]["400"]["description"]
