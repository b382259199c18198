"""Two API gaps closed: the catch-all for unknown /api/ addresses now asks for credentials first, and the last writes
that dropped unknown fields unread (withdrawing a sample flag, the multipart judgement import) refuse them by name.

An anonymous caller of an unknown address got the JSON 404, where every endpoint answers 401: it learnt that the
address was wrong, not that it must sign in. Signed-in callers keep the 404 (tests/annotate/test_api_not_found.py).
The flag's DELETE and the import share RejectsUnknownFields with every other write (annotate.api.validation).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotate.models import Batch, Sample, SampleFlag
from annotate.services import flags, tokens
from judging.models import Judge, Judgement, JudgeRun
from tests.conftest import login

pytestmark = pytest.mark.django_db

UNKNOWN = ["/api/nope/", "/api/spans/abc/", "/api/projects/demo/nope/", "/api/projects/café/export/"]
METHODS = ["get", "post", "put", "patch", "delete", "options", "head"]


# --------------------------------------------------------------------------- unknown addresses


@pytest.mark.parametrize("debug", [False, True], ids=["production", "debug"])
@pytest.mark.parametrize("path", UNKNOWN)
def test_an_anonymous_caller_of_an_unknown_address_gets_the_401_of_every_endpoint(
    path: str, debug: bool, settings: Any
) -> None:
    settings.DEBUG = debug
    endpoint = Client().get("/api/projects/")
    assert endpoint.status_code == 401
    for method in METHODS:
        answer = getattr(Client(), method)(path)
        assert answer.status_code == 401, (method, answer.content[:200])
        assert answer["WWW-Authenticate"] == endpoint["WWW-Authenticate"] == "Token", method
        if method != "head":
            assert answer.json() == endpoint.json() == {"detail": "Authentication credentials were not provided."}


def test_a_bad_token_on_an_unknown_address_gets_the_401_a_bad_token_gets_anywhere() -> None:
    headers = {"HTTP_AUTHORIZATION": "Token fl_not-a-key"}
    endpoint = Client().get("/api/projects/", **headers)
    answer = Client().get("/api/nope/", **headers)
    assert answer.status_code == endpoint.status_code == 401
    assert answer.json() == endpoint.json()


def test_a_caller_with_a_good_token_still_gets_the_404_naming_the_address(alice: Any) -> None:
    _, key = tokens.create_api_token(alice, "script")
    answer = Client().post("/api/nope/", HTTP_AUTHORIZATION=f"Token {key}")
    assert answer.status_code == 404
    assert answer.json()["detail"].startswith("No API endpoint at /api/nope/")


def test_an_anonymous_post_without_the_final_slash_gets_401_not_the_hint(admin_user: Any) -> None:
    anonymous = Client().post("/api/projects", {}, content_type="application/json")
    assert anonymous.status_code == 401
    assert "slash" not in anonymous.json()["detail"]
    signed_in = login(admin_user).post("/api/projects", {}, content_type="application/json")
    assert signed_in.json() == {"detail": "API addresses end with a slash: send this to /api/projects/"}


def test_an_anonymous_get_without_the_final_slash_is_still_sent_to_the_endpoint_which_asks_for_credentials() -> None:
    moved = Client().get("/api/projects?limit=5")
    assert moved.status_code == 301 and moved["Location"] == "/api/projects/?limit=5"
    assert Client().get(moved["Location"]).status_code == 401


# --------------------------------------------------------------------------- withdrawing a flag


@pytest.fixture
def flagged(sample: Sample, alice: Any) -> Sample:
    flags.flag_sample(sample, alice, round=1, kind="broken", comment="cut off")
    return sample


def flag_url(sample: Sample) -> str:
    return f"/api/samples/{sample.pk}/flag/"


@pytest.mark.parametrize(("body", "content_type"), [
    ('{"round": 1, "reason": "fixed"}', "application/json"),
    ("round=1&reason=fixed", "application/x-www-form-urlencoded"),
])
def test_withdrawing_a_flag_with_an_unknown_field_is_refused_by_name_and_withdraws_nothing(
    flagged: Sample, alice: Any, body: str, content_type: str
) -> None:
    answer = login(alice).delete(flag_url(flagged), body, content_type=content_type)
    assert answer.status_code == 400
    assert answer.json() == {"reason": ["unknown field 'reason'; nothing was saved (fields you may send: round)"]}
    assert SampleFlag.objects.filter(sample=flagged, annotator__username="alice").exists()


def test_withdrawing_a_flag_with_a_body_that_is_no_object_is_refused(flagged: Sample, alice: Any) -> None:
    answer = login(alice).delete(flag_url(flagged), "[1]", content_type="application/json")
    assert answer.status_code == 400 and "non_field_errors" in answer.json()
    assert SampleFlag.objects.filter(sample=flagged).exists()


@pytest.mark.parametrize(("body", "content_type"), [
    ("", "application/json"),
    ("{}", "application/json"),
    ('{"round": 1}', "application/json"),
    ("round=1", "application/x-www-form-urlencoded"),
])
def test_withdrawing_a_flag_with_no_body_or_only_its_round_still_works(
    flagged: Sample, alice: Any, body: str, content_type: str
) -> None:
    answer = login(alice).delete(flag_url(flagged), body, content_type=content_type)
    assert answer.status_code == 204, answer.content[:200]
    assert not SampleFlag.objects.exists()


def test_a_bad_round_in_the_body_keeps_its_message(flagged: Sample, alice: Any) -> None:
    answer = login(alice).delete(flag_url(flagged), json.dumps({"round": "x"}), content_type="application/json")
    assert answer.json() == {"round": ["'x' is not a round number (1, 2, ...)"]}
    assert SampleFlag.objects.exists()


# --------------------------------------------------------------------------- the multipart judgement import

IMPORT = "/api/projects/demo/judgements/import/"
JSONL = b'{"sample": "0", "judge": "j", "score": 3}\n'


def jsonl() -> SimpleUploadedFile:
    return SimpleUploadedFile("judged.jsonl", JSONL)


def nothing_imported() -> bool:
    return not Judge.objects.exists() and not JudgeRun.objects.exists() and not Judgement.objects.exists()


def test_an_import_with_an_unknown_form_field_is_refused_by_name_and_imports_nothing(
    batch: Batch, admin_user: Any
) -> None:
    answer = login(admin_user).post(IMPORT, {"file": jsonl(), "flagg": "true"})
    assert answer.status_code == 400
    assert answer.json() == {"flagg": ["unknown field 'flagg'; nothing was saved (fields you may send: file, flag)"]}
    assert nothing_imported()


def test_an_import_names_an_unknown_file_part_and_a_missing_file_in_one_answer(batch: Batch, admin_user: Any) -> None:
    answer = login(admin_user).post(IMPORT, {"files": jsonl()})
    assert answer.status_code == 400
    assert set(answer.json()) == {"file", "files"}
    assert answer.json()["files"] == ["unknown field 'files'; nothing was saved (fields you may send: file, flag)"]
    assert nothing_imported()


def test_an_import_with_its_own_fields_and_a_forms_csrf_token_still_imports(batch: Batch, admin_user: Any) -> None:
    answer = login(admin_user).post(IMPORT, {"file": jsonl(), "flag": "false", "csrfmiddlewaretoken": "x"})
    assert answer.status_code == 201, answer.content[:300]
    assert answer.json()["judgements"] == 1
