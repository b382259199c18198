"""Creating a judge with several bad settings names every one of them in one answer (field -> [messages]), by the
API and on the judges page, instead of one more after each fix; nothing is written."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Batch
from judging.models import Judge
from judging.services.judges import JudgeSettingsError, create_judge
from tests.conftest import login
from tests.judging.audit_helpers import make_judge

URL = "/api/projects/demo/judges/"
# Messages name a setting by its label on the judges page; the API keeps the field names as the keys.
FTP = "Endpoint (base URL) must be an http(s) URL such as http://127.0.0.1:11434/v1, not 'ftp://example.org/v1'."


def post(user: Any, body: Any) -> Any:
    return login(user).post(URL, json.dumps(body), content_type="application/json")


@pytest.mark.django_db
def test_a_bad_base_url_is_named_beside_the_fields_the_serializer_refuses(batch: Batch, admin_user: Any) -> None:
    answer = post(admin_user, {"name": "x" * 101, "kind": "rubric", "base_url": "ftp://example.org/v1", "model": "m",
                               "concurrency": 0, "max_retries": "many"})
    assert answer.status_code == 400
    errors = answer.json()
    assert set(errors) == {"name", "concurrency", "max_retries", "base_url"}
    assert errors["base_url"] == [FTP]
    assert all(isinstance(messages, list) and messages for messages in errors.values())
    assert not Judge.objects.exists()


@pytest.mark.django_db
def test_every_setting_the_service_refuses_is_named_at_once(batch: Batch, admin_user: Any) -> None:
    taken = make_judge(batch.project, "taken")
    answer = post(admin_user, {"name": "taken", "kind": "rubric", "base_url": "ftp://example.org/v1",
                               "api_key_env": "not a name", "nli_overlap": 8})
    assert answer.status_code == 400
    errors = answer.json()
    assert errors == {
        "name": [f"Name 'taken' is already used by another judge of this project (id {taken.pk})."],
        "base_url": [FTP],
        "api_key_env": [errors["api_key_env"][0]],
        "nli_overlap": ["A rubric judge has no setting 'nli_overlap'."],
        "model": ["Model is required for a rubric LLM judge."],
    }
    assert "NAME of an environment variable" in errors["api_key_env"][0]
    assert Judge.objects.count() == 1


@pytest.mark.django_db
def test_a_refused_field_is_not_also_reported_missing(batch: Batch, admin_user: Any) -> None:
    """A base_url too long for the serializer is refused there; the service does not add "base_url is required"."""
    answer = post(admin_user, {"name": "x", "kind": "rubric", "base_url": "http://h/" + "v" * 600})
    assert answer.status_code == 400
    errors = answer.json()
    assert set(errors) == {"base_url", "model"} and len(errors["base_url"]) == 1
    assert "required" not in errors["base_url"][0]


@pytest.mark.django_db
def test_a_body_that_is_not_an_object_gets_one_error(batch: Batch, admin_user: Any) -> None:
    answer = post(admin_user, ["name", "kind"])
    assert answer.status_code == 400 and list(answer.json()) == ["non_field_errors"]


@pytest.mark.django_db
def test_the_service_error_names_the_first_field_and_holds_them_all(batch: Batch) -> None:
    with pytest.raises(JudgeSettingsError) as refused:
        create_judge(batch.project, name="", kind="rubric", base_url="ftp://h", concurrency=0)
    error = refused.value
    assert (error.field, str(error)) == ("name", "Name must be 1 to 100 characters.")
    assert list(error.problems) == ["name", "base_url", "concurrency", "model"]
    assert not Judge.objects.exists()


@pytest.mark.django_db
def test_the_judges_page_shows_every_refused_setting_beside_its_field(batch: Batch, admin_user: Any) -> None:
    make_judge(batch.project, "taken")
    response = login(admin_user).post(reverse("judging-judge-create", args=["demo", "rubric"]), {
        "rubric-name": "taken", "rubric-base_url": "ftp://example.org/v1", "rubric-model": "m",
        "rubric-api_key_env": "", "rubric-concurrency": "4", "rubric-timeout_seconds": "30", "rubric-max_retries": "1",
        "rubric-price_input_per_mtok": "0", "rubric-price_output_per_mtok": "0",
    })
    assert response.status_code == 400
    page = response.content.decode()
    assert 'data-error-for="name">Name &#x27;taken&#x27; is already used' in page
    assert 'data-error-for="base_url">Endpoint (base URL) must be an http(s) URL' in page
    assert Judge.objects.count() == 1


@pytest.mark.django_db
def test_the_judges_page_names_the_services_refusals_beside_the_forms_own(batch: Batch, admin_user: Any) -> None:
    """A concurrency the form refuses (0) does not hide a base_url only the service refuses, nor a taken name."""
    make_judge(batch.project, "taken")
    response = login(admin_user).post(reverse("judging-judge-create", args=["demo", "rubric"]), {
        "rubric-name": "taken", "rubric-base_url": "ftp://example.org/v1", "rubric-model": "m",
        "rubric-api_key_env": "", "rubric-concurrency": "0", "rubric-timeout_seconds": "thirty",
        "rubric-max_retries": "1", "rubric-price_input_per_mtok": "0", "rubric-price_output_per_mtok": "0",
    })
    assert response.status_code == 400
    page = response.content.decode()
    for field in ("name", "base_url", "concurrency", "timeout_seconds"):
        assert page.count(f'data-error-for="{field}"') == 1, field
    assert 'data-error-for="base_url">Endpoint (base URL) must be an http(s) URL' in page
    assert "Timeout (s) is required" not in page  # refused by the form, so not also reported missing
    assert Judge.objects.count() == 1


@pytest.mark.django_db
def test_editing_a_judge_names_the_services_refusals_beside_the_forms_own(batch: Batch, admin_user: Any) -> None:
    judge = make_judge(batch.project, "first")
    make_judge(batch.project, "taken")
    before = Judge.objects.values().get(pk=judge.pk)
    prefix = f"judge-{judge.pk}-"
    fields = {"name": "taken", "base_url": "ftp://example.org/v1", "model": "m", "api_key_env": "",
              "concurrency": "-3", "timeout_seconds": "30", "max_retries": "1", "price_input_per_mtok": "0",
              "price_output_per_mtok": "0"}
    response = login(admin_user).post(reverse("judging-judge-update", args=["demo", judge.pk]),
                                      {prefix + field: value for field, value in fields.items()})
    assert response.status_code == 400
    page = response.content.decode()
    for field in ("name", "base_url", "concurrency"):
        assert f'data-error-for="{field}"' in page, field
    assert Judge.objects.values().get(pk=judge.pk) == before
