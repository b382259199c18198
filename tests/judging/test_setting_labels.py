"""The judging pages speak the app's words, not the library's or the code's: an empty choice says what to choose
(never Django's "---------"), and a refused setting is named by the label its form shows, on the page and in the
API's message (whose key stays the field's name)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Batch
from judging.models import Judge
from tests.conftest import login
from tests.judging.audit_helpers import Element, make_judge, read_html

pytestmark = pytest.mark.django_db

DJANGO_EMPTY_CHOICE = "---------"


def first_option(page: Element, name: str) -> str:
    select = page.one("select", name=name)
    return select.find("option")[0].text.strip()


def label_of(form: Element, field: str) -> str:
    """The label the page shows for a field (the text before its input)."""
    return form.one("label", data_field=field).find("span")[0].text.strip()


def error_of(form: Element, field: str) -> str:
    return form.one("span", data_error_for=field).text.strip()


def test_the_judge_choice_of_a_run_asks_for_a_judge(batch: Batch, admin_user: Any) -> None:
    make_judge(batch.project, "gpt")
    response = login(admin_user).get(reverse("judging-judges", args=["demo"]))
    html = response.content.decode()
    assert DJANGO_EMPTY_CHOICE not in html
    run_form = read_html(html).one("form", data_role="start-run")
    assert first_option(run_form, "judge") == "Choose a judge"


def test_the_writer_choice_of_a_synthetic_set_asks_for_a_rubric_judge(batch: Batch, admin_user: Any) -> None:
    make_judge(batch.project, "gpt")
    response = login(admin_user).get(reverse("judging-synthetic", args=["demo"]))
    html = response.content.decode()
    assert DJANGO_EMPTY_CHOICE not in html
    assert first_option(read_html(html), "writer") == "Choose a rubric judge"


RUBRIC = {
    "rubric-name": "gpt", "rubric-base_url": "ftp://example.org/v1", "rubric-model": "m",
    "rubric-api_key_env": "has spaces", "rubric-concurrency": "4", "rubric-timeout_seconds": "30",
    "rubric-max_retries": "1", "rubric-price_input_per_mtok": "0", "rubric-price_output_per_mtok": "0",
}


def test_a_refused_setting_is_named_by_the_label_beside_it(batch: Batch, admin_user: Any) -> None:
    response = login(admin_user).post(reverse("judging-judge-create", args=["demo", "rubric"]), RUBRIC)
    assert response.status_code == 400
    form = read_html(response.content).one("form", data_role="rubric-judge-form")
    for field in ("base_url", "api_key_env"):
        label, error = label_of(form, field), error_of(form, field)
        assert error.startswith(f"{label} must "), (field, error)
        assert field not in error, error  # no code name in what a person reads
    assert not Judge.objects.exists()


def test_a_refused_nli_setting_is_named_by_its_label(batch: Batch, admin_user: Any, tmp_path: Any) -> None:
    response = login(admin_user).post(reverse("judging-judge-create", args=["demo", "nli"]), {
        "nli-name": "hhem", "nli-nli_model_path": str(tmp_path / "missing"), "nli-nli_consistent_label": "",
        "nli-nli_max_length": "64", "nli-nli_overlap": "64", "nli-nli_batch_size": "8",
    })
    assert response.status_code == 400
    form = read_html(response.content).one("form", data_role="nli-judge-form")
    assert error_of(form, "nli_model_path").startswith(label_of(form, "nli_model_path") + " ")
    assert error_of(form, "nli_overlap").startswith(
        f"{label_of(form, 'nli_overlap')} 64 is more than half of {label_of(form, 'nli_max_length')} 64: "
    )


def test_a_refused_triage_setting_is_named_by_its_label_not_in_djangos_words(batch: Batch, admin_user: Any) -> None:
    nli = make_judge(batch.project, "hhem", kind=Judge.Kind.NLI, nli_model_path="/srv/hhem")
    response = login(admin_user).post(reverse("judging-settings", args=["demo"]), {
        "first_pass": "", "explainer": nli.pk, "llm_flag_at_most": "9", "nli_flag_below": "1.5",
        "audits_per_item": "many",
    })
    assert response.status_code == 400
    assert "Ensure this value" not in response.content.decode()
    form = read_html(response.content).one("form", data_role="triage-settings")
    assert error_of(form, "llm_flag_at_most") == f"{label_of(form, 'llm_flag_at_most')} must be at most 5, not 9."
    assert error_of(form, "nli_flag_below") == f"{label_of(form, 'nli_flag_below')} must be at most 1, not 1.5."
    assert error_of(form, "audits_per_item") == f"{label_of(form, 'audits_per_item')} must be a whole number."
    assert error_of(form, "explainer") == f"{label_of(form, 'explainer')} must be one of the choices offered."


def test_a_judge_form_range_error_is_in_the_apps_words(batch: Batch, admin_user: Any) -> None:
    response = login(admin_user).post(reverse("judging-judge-create", args=["demo", "rubric"]),
                                      RUBRIC | {"rubric-base_url": "http://127.0.0.1:9/v1", "rubric-api_key_env": "",
                                                "rubric-concurrency": "0"})
    assert response.status_code == 400
    form = read_html(response.content).one("form", data_role="rubric-judge-form")
    assert error_of(form, "concurrency") == "Concurrency must be at least 1, not 0."


def test_the_api_keeps_the_field_key_and_words_the_message_as_the_page_does(batch: Batch, admin_user: Any) -> None:
    answer = login(admin_user).post("/api/projects/demo/judges/", json.dumps(
        {"name": "gpt", "kind": "rubric", "base_url": "ftp://example.org/v1", "model": "m", "api_key_env": "a b"}
    ), content_type="application/json")
    assert answer.status_code == 400
    errors = answer.json()
    assert set(errors) == {"base_url", "api_key_env"}
    assert errors["base_url"][0].startswith("Endpoint (base URL) must be an http(s) URL")
    assert errors["api_key_env"][0].startswith("API key variable must be the NAME of an environment variable")
