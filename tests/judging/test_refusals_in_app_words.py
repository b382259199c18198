"""What the judges and run pages say when something cannot go ahead, in the app's words: Start triage with an imported
first-pass judge says what to do on the page (and says so before it is pressed), a run that failed on a judge setting
names it by the label the judge forms show, and a refused number quotes what was typed."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Batch, Project
from judging.models import Judge, JudgeRun
from judging.services import runs, triage
from judging.services.judges import JudgeSettingsError, create_judge, update_judging_settings
from tests.conftest import login
from tests.judging.audit_helpers import make_judge, read_html
from tests.judging.run_factories import add_samples, closed_port_url

pytestmark = pytest.mark.django_db

CODE_NAMES = ("base_url", "timeout_seconds", "api_key_env", "judge setting")


@pytest.fixture
def admin(admin_user: Any) -> Client:
    return login(admin_user)


def judges_url(project: Project) -> str:
    return reverse("judging-judges", args=[project.slug])


@pytest.fixture
def imported_first_pass(project: Project) -> Judge:
    judge = make_judge(project, "imported-gpt", kind=Judge.Kind.IMPORTED)
    update_judging_settings(project, first_pass=judge)
    return judge


def test_triage_with_an_imported_first_pass_says_what_to_do_in_the_app(
    project: Project, imported_first_pass: Judge
) -> None:
    with pytest.raises(JudgeSettingsError) as caught:
        triage.start_triage(project, queue=False)
    message = str(caught.value)
    assert caught.value.field == "first_pass"
    assert message.startswith("The first-pass judge 'imported-gpt' holds imported outputs and cannot run: ")
    assert "choose a rubric or NLI judge as First pass in the triage settings" in message
    assert 'README, "Importing and exporting judge outputs"' in message
    assert "import_judgements" not in message and "--flag" not in message
    assert not JudgeRun.objects.exists()


def test_the_judges_page_says_it_before_start_triage_and_disables_the_button(
    project: Project, admin: Client, imported_first_pass: Judge
) -> None:
    form = read_html(admin.get(judges_url(project)).content).one("form", data_role="start-triage")
    hint = form.one("p", data_role="triage-refusal").text.strip()
    assert hint == triage.first_pass_refusal(triage.judging_settings(project))
    assert hint.startswith("The first-pass judge 'imported-gpt' holds imported outputs")
    assert "disabled" in form.one("button").attrs


def test_a_posted_triage_shows_the_refusal_once(project: Project, admin: Client, imported_first_pass: Judge) -> None:
    response = admin.post(reverse("judging-triage-start", args=[project.slug]), {"batch": ""})
    assert response.status_code == 400
    form = read_html(response.content).one("form", data_role="start-triage")
    assert form.one("p", data_role="form-error").text.strip().startswith("The first-pass judge 'imported-gpt'")
    assert not form.find("p", data_role="triage-refusal")
    assert not JudgeRun.objects.exists()


def test_a_runnable_first_pass_shows_no_hint(project: Project, admin: Client) -> None:
    update_judging_settings(project, first_pass=make_judge(project, "gpt"))
    form = read_html(admin.get(judges_url(project)).content).one("form", data_role="start-triage")
    assert not form.find("p", data_role="triage-refusal")
    assert "disabled" not in form.one("button").attrs


def test_a_run_failure_names_the_setting_by_its_label_on_the_run_and_judges_pages(
    project: Project, admin: Client
) -> None:
    add_samples(project, 2)
    url = closed_port_url()
    judge = create_judge(project, name="gone", kind="rubric", base_url=url, model="test-model", max_retries=0)
    run = runs.execute_run(runs.start_run(project, judge, queue=False).pk)
    assert run.status == JudgeRun.Status.FAILED
    for page in (reverse("judging-run", args=[project.slug, run.pk]), judges_url(project)):
        errors = [span.text for span in read_html(admin.get(page).content).find("span")
                  if span.attrs.get("class") == "error" and url in span.text]
        assert len(errors) == 1, (page, errors)
        assert "check the judge's “Endpoint (base URL)”" in errors[0], (page, errors)
        assert not any(name in errors[0] for name in CODE_NAMES), (page, errors)


@pytest.mark.parametrize(("typed", "quoted"), [("-1", "-1"), (" -2.50 ", "-2.50")])
def test_a_negative_price_is_refused_quoting_what_was_typed(
    batch: Batch, admin: Client, typed: str, quoted: str
) -> None:
    response = admin.post(reverse("judging-judge-create", args=["demo", "rubric"]), {
        "rubric-name": "gpt", "rubric-base_url": "http://127.0.0.1:9/v1", "rubric-model": "m",
        "rubric-api_key_env": "", "rubric-concurrency": "4", "rubric-timeout_seconds": "30",
        "rubric-max_retries": "1", "rubric-price_input_per_mtok": typed, "rubric-price_output_per_mtok": "0",
    })
    assert response.status_code == 400
    form = read_html(response.content).one("form", data_role="rubric-judge-form")
    error = form.one("span", data_error_for="price_input_per_mtok").text.strip()
    assert error == f"Price per million input tokens (US$) must be at least 0, not {quoted}."
    assert not Judge.objects.exists()
