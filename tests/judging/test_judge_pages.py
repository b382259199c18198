"""The judges page, the prompt editor, a run's page (and its htmx fragment), the judge-vs-people page, and the
project page's link block: who sees them, what bad input gets, and that an API key never shows."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotate.models import Batch, Membership, Project, Sample
from judging.models import Audit, AuditItem, Judge, Judgement, JudgeRun, PromptVersion
from judging.prompts import DEFAULT_RUBRIC
from tests.annotate.results_scene import HTMX, tags
from tests.conftest import login, make_user

SECRET = "sk-faithlab-test-0123456789abcdefSECRET"


@pytest.fixture
def audrey(project: Project) -> Any:
    auditor = make_user("audrey")
    Membership.objects.create(project=project, user=auditor, role=Membership.Role.AUDITOR)
    return auditor


@pytest.fixture
def admin(admin_user: Any) -> Client:
    return login(admin_user)


@pytest.fixture
def local_judge(project: Project) -> Judge:
    return Judge.objects.create(project=project, name="local-llm", kind=Judge.Kind.RUBRIC,
                                base_url="http://127.0.0.1:9/v1", model="test-model")


def judges_url(project: Project) -> str:
    return reverse("judging-judges", args=[project.slug])


RUBRIC_POST = {
    "rubric-name": "gpt-mini", "rubric-base_url": "http://127.0.0.1:8000/v1", "rubric-model": "gpt-4o-mini",
    "rubric-api_key_env": "", "rubric-with_reasoning": "on", "rubric-concurrency": "8",
    "rubric-timeout_seconds": "30", "rubric-max_retries": "3", "rubric-price_input_per_mtok": "0.15",
    "rubric-price_output_per_mtok": "0.6",
}


# ----------------------------------------------------------------------------- who sees what


def test_admins_see_the_judges_page_with_their_forms(project: Project, admin: Client, local_judge: Judge) -> None:
    response = admin.get(judges_url(project))
    assert response.status_code == 200
    page = tags(response)
    page.one("tr", data_judge=str(local_judge.pk))
    page.one("form", data_role="rubric-judge-form")
    page.one("form", data_role="nli-judge-form")
    page.one("form", data_role="triage-settings")
    page.one("form", data_role="start-run")
    page.one("form", data_role="start-triage")


@pytest.mark.parametrize("who", ["alice", "audrey"])
def test_annotators_and_auditors_get_403_on_the_admin_pages(
    project: Project, batch: Batch, local_judge: Judge, who: str, request: pytest.FixtureRequest
) -> None:
    user = request.getfixturevalue(who)
    client = login(user)
    run = JudgeRun.objects.create(project=project, judge=local_judge)
    for url in (
        judges_url(project),
        reverse("judging-prompt", args=[project.slug, "rubric"]),
        reverse("judging-run", args=[project.slug, run.pk]),
        reverse("judging-people", args=[project.slug, local_judge.pk]),
    ):
        assert client.get(url).status_code == 403, url
    response = client.post(reverse("judging-judge-create", args=[project.slug, "rubric"]), RUBRIC_POST)
    assert response.status_code == 403
    assert not Judge.objects.filter(name="gpt-mini").exists()


def test_outsiders_get_404_and_visitors_the_login_page(project: Project, charlie: Any, local_judge: Judge) -> None:
    run = JudgeRun.objects.create(project=project, judge=local_judge)
    urls = [
        judges_url(project),
        reverse("judging-prompt", args=[project.slug, "rubric"]),
        reverse("judging-run", args=[project.slug, run.pk]),
        reverse("judging-people", args=[project.slug, local_judge.pk]),
    ]
    for url in urls:
        assert login(charlie).get(url).status_code == 404, url
        assert Client().get(url).status_code == 302, url


def test_a_run_is_found_only_under_its_own_project(project: Project, admin_user: Any, local_judge: Judge) -> None:
    other = Project.objects.create(name="Other", slug="other")
    Membership.objects.create(project=other, user=admin_user, role=Membership.Role.ADMIN)
    run = JudgeRun.objects.create(project=project, judge=local_judge)
    assert login(admin_user).get(reverse("judging-run", args=["other", run.pk])).status_code == 404


def test_the_forms_take_posts_only(project: Project, admin: Client) -> None:
    assert admin.get(reverse("judging-judge-create", args=[project.slug, "rubric"])).status_code == 405
    assert admin.get(reverse("judging-run-start", args=[project.slug])).status_code == 405
    assert admin.post(judges_url(project)).status_code == 405


# ----------------------------------------------------------------------------- judges


def test_creating_a_rubric_judge_saves_its_settings(project: Project, admin: Client) -> None:
    response = admin.post(reverse("judging-judge-create", args=[project.slug, "rubric"]), RUBRIC_POST)
    assert response.status_code == 302
    judge = Judge.objects.get(project=project, name="gpt-mini")
    assert (judge.kind, judge.base_url, judge.model, judge.with_reasoning, judge.concurrency) == (
        "rubric", "http://127.0.0.1:8000/v1", "gpt-4o-mini", True, 8)
    assert (judge.timeout_seconds, judge.max_retries, judge.price_output_per_mtok) == (30.0, 3, 0.6)
    page = admin.get(judges_url(project)).content.decode()
    assert "gpt-4o-mini" in page and "score only" not in page


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("base_url", "ftp://example.org", "Endpoint (base URL) must be an http(s) URL"),
        ("model", "", "required"),
        ("concurrency", "many", "whole number"),
        ("concurrency", "0", "Concurrency must be at least 1, not 0."),
        ("api_key_env", "has spaces in it", "NAME of an environment variable"),
    ],
)
def test_a_bad_judge_setting_is_shown_beside_its_field_and_nothing_is_written(
    project: Project, admin: Client, field: str, value: str, words: str
) -> None:
    response = admin.post(reverse("judging-judge-create", args=[project.slug, "rubric"]),
                          RUBRIC_POST | {f"rubric-{field}": value})
    assert response.status_code == 400
    errors = [attrs for attrs in tags(response).find("span", data_error_for=field)]
    assert errors, f"no error beside {field}"
    assert words in response.content.decode()
    assert not Judge.objects.filter(project=project).exists()
    # The form keeps what was typed, and opens itself.
    tags(response).one("details", id="new-rubric", open="")


def test_a_pasted_api_key_is_refused_without_being_echoed(project: Project, admin: Client) -> None:
    response = admin.post(reverse("judging-judge-create", args=[project.slug, "rubric"]),
                          RUBRIC_POST | {"rubric-api_key_env": SECRET})
    assert response.status_code == 400
    assert tags(response).find("span", data_error_for="api_key_env")
    # The input the form re-shows must not carry the key either: a secret is never sent back.
    assert SECRET not in response.content.decode()
    assert not Judge.objects.exists()


def test_a_taken_name_is_an_error_on_the_name(project: Project, admin: Client, local_judge: Judge) -> None:
    response = admin.post(reverse("judging-judge-create", args=[project.slug, "rubric"]),
                          RUBRIC_POST | {"rubric-name": "local-llm"})
    assert response.status_code == 400
    assert tags(response).find("span", data_error_for="name")
    assert Judge.objects.count() == 1


def test_an_nli_judge_needs_a_model_directory_on_the_server(project: Project, admin: Client, tmp_path: Any) -> None:
    post = {"nli-name": "hhem", "nli-nli_model_path": str(tmp_path / "missing"), "nli-nli_consistent_label": "",
            "nli-nli_max_length": "512", "nli-nli_overlap": "32", "nli-nli_batch_size": "16"}
    response = admin.post(reverse("judging-judge-create", args=[project.slug, "nli"]), post)
    assert response.status_code == 400
    assert tags(response).find("span", data_error_for="nli_model_path")
    assert not Judge.objects.exists()
    response = admin.post(reverse("judging-judge-create", args=[project.slug, "nli"]),
                          post | {"nli-nli_model_path": str(tmp_path)})
    assert response.status_code == 302
    judge = Judge.objects.get(name="hhem")
    assert (judge.kind, judge.nli_model_path, judge.nli_batch_size) == ("nli", str(tmp_path), 16)


def test_editing_a_judge_changes_it_and_a_bad_edit_changes_nothing(
    project: Project, admin: Client, local_judge: Judge
) -> None:
    prefix = f"judge-{local_judge.pk}-"
    fields = {key.removeprefix("rubric-"): value for key, value in RUBRIC_POST.items()}
    post = {prefix + key: value for key, value in fields.items()} | {prefix + "name": "local-llm"}
    url = reverse("judging-judge-update", args=[project.slug, local_judge.pk])
    response = admin.post(url, post | {prefix + "concurrency": "16"})
    assert response.status_code == 302
    local_judge.refresh_from_db()
    assert local_judge.concurrency == 16 and local_judge.model == "gpt-4o-mini"

    response = admin.post(url, post | {prefix + "base_url": "not a url", prefix + "concurrency": "2"})
    assert response.status_code == 400
    assert tags(response).find("span", data_error_for="base_url")
    local_judge.refresh_from_db()
    assert local_judge.concurrency == 16 and local_judge.base_url == "http://127.0.0.1:8000/v1"


def test_the_api_key_value_never_reaches_a_page(
    project: Project, admin: Client, monkeypatch: pytest.MonkeyPatch, batch: Batch
) -> None:
    monkeypatch.setenv("FAITHLAB_TEST_KEY", SECRET)
    response = admin.post(reverse("judging-judge-create", args=[project.slug, "rubric"]),
                          RUBRIC_POST | {"rubric-api_key_env": "FAITHLAB_TEST_KEY"})
    assert response.status_code == 302
    judge = Judge.objects.get(name="gpt-mini")
    page = admin.get(judges_url(project))
    html = page.content.decode()
    assert "FAITHLAB_TEST_KEY" in html
    tags(page).one("span", data_key_set="yes")
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE)
    pages = [
        html,
        admin.get(reverse("judging-run", args=[project.slug, run.pk])).content.decode(),
        admin.get(reverse("judging-run", args=[project.slug, run.pk]), **HTMX).content.decode(),
        admin.get(reverse("judging-people", args=[project.slug, judge.pk])).content.decode(),
        admin.get(reverse("project", args=[project.slug])).content.decode(),
    ]
    for text in pages:
        assert SECRET not in text
        assert "0123456789abcdef" not in text

    monkeypatch.delenv("FAITHLAB_TEST_KEY")
    tags(admin.get(judges_url(project))).one("span", data_key_set="no")


# ----------------------------------------------------------------------------- triage settings and starting runs


def test_triage_settings_are_saved_and_a_bad_threshold_is_shown_on_its_field(
    project: Project, admin: Client, local_judge: Judge
) -> None:
    url = reverse("judging-settings", args=[project.slug])
    post = {"first_pass": str(local_judge.pk), "explainer": str(local_judge.pk), "llm_flag_at_most": "2",
            "nli_flag_below": "0.4", "blind_by_default": "on", "audits_per_item": "2"}
    assert admin.post(url, post).status_code == 302
    project.judging_settings.refresh_from_db()
    saved = project.judging_settings
    assert (saved.first_pass_id, saved.llm_flag_at_most, saved.nli_flag_below, saved.blind_by_default,
            saved.audits_per_item) == (local_judge.pk, 2, 0.4, True, 2)

    response = admin.post(url, post | {"llm_flag_at_most": "7", "audits_per_item": "5"})
    assert response.status_code == 400
    assert tags(response).find("span", data_error_for="llm_flag_at_most")
    saved.refresh_from_db()
    assert (saved.llm_flag_at_most, saved.audits_per_item) == (2, 2)


def test_starting_a_run_queues_it_and_a_missing_key_variable_is_named(
    project: Project, admin: Client, batch: Batch, local_judge: Judge, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = reverse("judging-run-start", args=[project.slug])
    response = admin.post(url, {"judge": str(local_judge.pk), "scope": "batch", "batch": str(batch.pk)})
    assert response.status_code == 302
    run = JudgeRun.objects.get()
    assert (run.judge_id, run.scope, run.batch_id, run.total, run.status) == (local_judge.pk, "batch", batch.pk, 3,
                                                                              "queued")
    page = tags(admin.get(judges_url(project)))
    page.one("div", data_run=str(run.pk), data_run_status="queued")

    monkeypatch.delenv("FAITHLAB_UNSET_KEY", raising=False)
    keyed = Judge.objects.create(project=project, name="keyed", kind=Judge.Kind.RUBRIC,
                                 base_url="http://127.0.0.1:9/v1", model="m", api_key_env="FAITHLAB_UNSET_KEY")
    response = admin.post(url, {"judge": str(keyed.pk), "scope": "all"})
    assert response.status_code == 400
    tags(response).one("p", data_role="form-error")
    assert "FAITHLAB_UNSET_KEY" in response.content.decode()
    assert JudgeRun.objects.count() == 1

    response = admin.post(url, {"judge": str(local_judge.pk), "scope": "batch"})
    assert response.status_code == 400
    assert tags(response).find("span", data_error_for="batch")
    assert JudgeRun.objects.count() == 1


def test_a_second_click_on_start_while_the_run_is_queued_starts_no_second_run(
    project: Project, admin: Client, batch: Batch, local_judge: Judge
) -> None:
    url = reverse("judging-run-start", args=[project.slug])
    form = {"judge": str(local_judge.pk), "scope": "batch", "batch": str(batch.pk)}
    assert admin.post(url, form).status_code == 302
    first = JudgeRun.objects.get()
    response = admin.post(url, form, follow=True)
    assert JudgeRun.objects.count() == 1
    assert f"Run {first.pk} of {local_judge.name} over the same outputs is still queued" in response.content.decode()

    # Over other outputs it is another run; once the first has ended, the same outputs make a new one too.
    assert admin.post(url, {"judge": str(local_judge.pk), "scope": "all"}).status_code == 302
    assert JudgeRun.objects.count() == 2
    JudgeRun.objects.filter(pk=first.pk).update(status=JudgeRun.Status.DONE)
    assert admin.post(url, form).status_code == 302
    assert JudgeRun.objects.count() == 3


def test_triage_without_a_first_pass_says_so(project: Project, admin: Client, batch: Batch) -> None:
    response = admin.post(reverse("judging-triage-start", args=[project.slug]), {"batch": ""})
    assert response.status_code == 400
    assert "first-pass" in response.content.decode()
    assert not JudgeRun.objects.exists()


# ----------------------------------------------------------------------------- the rubric editor


def test_saving_an_edited_rubric_makes_a_new_version_and_the_same_text_does_not(
    project: Project, admin: Client, admin_user: Any
) -> None:
    url = reverse("judging-prompt", args=[project.slug, "rubric"])
    response = admin.get(url)
    assert response.status_code == 200
    assert "Fully faithful" in response.content.decode()  # the default text, before any version exists
    edited = DEFAULT_RUBRIC + "\nBe strict about numbers.\n"
    assert admin.post(url, {"text": edited, "note": "stricter"}).status_code == 302
    versions = list(PromptVersion.objects.filter(project=project, kind="rubric").order_by("number"))
    assert [version.number for version in versions] == [1, 2]
    assert "Be strict about numbers." in versions[1].text
    assert (versions[1].note, versions[1].created_by) == ("stricter", admin_user)

    assert admin.post(url, {"text": edited, "note": ""}).status_code == 302
    assert PromptVersion.objects.filter(project=project, kind="rubric").count() == 2

    page = tags(admin.get(url))
    assert [row["data-version"] for row in page.find("tr") if "data-version" in row] == ["2", "1"]
    page.one("strong", data_role="current-version")


def test_a_rubric_without_a_score_scale_is_refused_with_its_problems(project: Project, admin: Client) -> None:
    url = reverse("judging-prompt", args=[project.slug, "rubric"])
    response = admin.post(url, {"text": "Judge the output. Be fair.", "note": ""})
    assert response.status_code == 400
    refused = response.content.decode()
    assert 'data-role="prompt-refused"' in refused and "score" in refused
    assert "Judge the output. Be fair." in refused  # what was typed is kept
    assert not PromptVersion.objects.filter(project=project, kind="rubric", number__gt=1).exists()


def test_an_unknown_prompt_kind_is_404(project: Project, admin: Client) -> None:
    assert admin.get(reverse("judging-prompt", args=[project.slug, "poem"])).status_code == 404


# ----------------------------------------------------------------------------- a run's page


@pytest.fixture
def finished_run(project: Project, batch: Batch, local_judge: Judge) -> JudgeRun:
    s0, s1, s2 = batch.samples.order_by("position")
    run = JudgeRun.objects.create(project=project, judge=local_judge, status=JudgeRun.Status.DONE, total=3, done=3,
                                  scored=1, failed=2, calls=4)
    Judgement.objects.create(run=run, sample=s0, status="ok", score=4, reasoning="All <b>verified</b>.", raw="{}",
                             latency_seconds=0.5, input_tokens=100, output_tokens=20, cost=0.00012)
    Judgement.objects.create(run=run, sample=s1, status="parse_error", raw="I would say the score is four-ish",
                             error="the answer holds no JSON object", latency_seconds=0.7)
    Judgement.objects.create(run=run, sample=s2, status="error", error="HTTP 500 after 4 attempts")
    return run


def test_the_run_page_shows_figures_and_the_raw_answer_of_a_parse_error(
    project: Project, admin: Client, finished_run: JudgeRun
) -> None:
    response = admin.get(reverse("judging-run", args=[project.slug, finished_run.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    page = tags(response)
    assert len(page.find("tr", data_status="ok")) == 1
    assert "4 · very faithful" in html
    assert "All &lt;b&gt;verified&lt;/b&gt;." in html  # reasoning is escaped
    page.one("details", data_role="raw")
    assert "I would say the score is four-ish" in html
    assert "HTTP 500 after 4 attempts" in html
    figures = {row["data-figure"] for row in page.find("tr") if "data-figure" in row}
    assert {"items", "scored", "parse_errors", "errors", "calls", "cached", "seconds", "cost", "mean_latency",
            "rubric_version"} <= figures
    assert ">0.6000<" not in html and "0.600" in html  # mean latency of the two calls


def test_the_run_page_filters_by_status_and_pages(
    project: Project, admin: Client, finished_run: JudgeRun
) -> None:
    url = reverse("judging-run", args=[project.slug, finished_run.pk])
    page = tags(admin.get(url, {"status": "parse_error"}))
    assert [row["data-status"] for row in page.find("tr") if "data-judgement" in row] == ["parse_error"]
    everything = tags(admin.get(url, {"status": "nonsense"}))  # an unknown status shows everything
    assert len([row for row in everything.find("tr") if "data-judgement" in row]) == 3


def test_an_nli_judgement_shows_p_and_one_plus_four_p(project: Project, admin: Client, sample: Sample) -> None:
    judge = Judge.objects.create(project=project, name="hhem", kind=Judge.Kind.NLI, nli_model_path="/srv/models/hhem")
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE, total=1, done=1)
    Judgement.objects.create(run=run, sample=sample, status="ok", probability=0.7321)
    html = admin.get(reverse("judging-run", args=[project.slug, run.pk])).content.decode()
    assert "p 0.732 · 1 + 4p = 3.93" in html
    assert "1 + 4p is ours" in html


def test_the_htmx_fragment_is_the_progress_row_which_polls_itself_only_while_active(
    project: Project, admin: Client, local_judge: Judge
) -> None:
    run = JudgeRun.objects.create(project=project, judge=local_judge, status=JudgeRun.Status.RUNNING, total=10,
                                  done=4)
    url = reverse("judging-run", args=[project.slug, run.pk])
    response = admin.get(url, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html and "data-role=\"judgements\"" not in html
    row = tags(response).one("div", data_role="run-progress")
    assert (row["hx-get"], row["hx-trigger"], row["hx-target"], row["hx-swap"]) == (url, "every 1s", "this",
                                                                                     "outerHTML")
    assert row["hx-select"] == "unset"
    assert "4 / 10" in html

    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.DONE, done=10)
    row = tags(admin.get(url, **HTMX)).one("div", data_role="run-progress")
    assert "hx-get" not in row and row["data-run-status"] == "done"


# ----------------------------------------------------------------------------- judge vs people, project page


def test_the_people_page_shows_the_figures_with_explanations(
    project: Project, admin: Client, batch: Batch, local_judge: Judge, audrey: Any, admin_user: Any
) -> None:
    s0, s1, s2 = batch.samples.order_by("position")
    run = JudgeRun.objects.create(project=project, judge=local_judge, status=JudgeRun.Status.DONE)
    for sample, score in ((s0, 2), (s1, 5), (s2, 3)):
        Judgement.objects.create(run=run, sample=sample, status="ok", score=score)
    for sample, scores in ((s0, (1, 2)), (s1, (5, 4)), (s2, (4, None))):
        item = AuditItem.objects.create(project=project, sample=sample, reason="test")
        for auditor, score in zip((audrey, admin_user), scores, strict=True):
            Audit.objects.create(item=item, auditor=auditor, score=score, served_at=timezone.now())
    response = admin.get(reverse("judging-people", args=[project.slug, local_judge.pk]))
    assert response.status_code == 200
    page = tags(response)
    html = response.content.decode()
    counts = {f"{j}-{a}": int(n) for j, a, n in re.findall(r'data-cell="(\d)-(\d)">(\d+)<', html)}
    assert len(counts) == 25
    # Judge 2 vs 1 and 2; judge 5 vs 5 and 4; judge 3 vs 4 (the unanswered audit does not count).
    assert {cell: n for cell, n in counts.items() if n} == {"2-1": 1, "2-2": 1, "5-5": 1, "5-4": 1, "3-4": 1}
    assert "auditor − judge" in html and "harsher" in html and "median" in html
    # Residuals: (1-2, 2-2, 5-5, 4-5, 4-3) = (-1, 0, 0, -1, 1): mean -0.2.
    assert "-0.200" in html
    # Flags (score <= 3): s0 (median 1.5, confirmed) and s2 (median 4, not): 50%.
    assert "50.00%" in html and "1 of 2" in html  # shares: 2 decimals and a % sign, as on every page
    alphas = page.find("td", data_role="alpha-auditors")
    assert len(alphas) == 2 and all(cell["data-alpha"] for cell in alphas)


def test_the_project_page_links_admins_and_auditors_and_shows_annotators_nothing(
    project: Project, admin: Client, audrey: Any, alice: Any
) -> None:
    url = reverse("project", args=[project.slug])
    admin_page = tags(admin.get(url))
    assert admin_page.one("a", data_role="judges-link")["href"] == judges_url(project)
    audit_url = reverse("judging-audit", args=[project.slug])
    assert admin_page.one("a", data_role="audit-link")["href"] == audit_url
    auditor_page = tags(login(audrey).get(url))
    assert auditor_page.one("a", data_role="audit-link")["href"] == audit_url
    assert not auditor_page.find("a", data_role="judges-link")
    annotator_page = login(alice).get(url).content.decode()
    assert "judging-links" not in annotator_page and "/judges/" not in annotator_page and "/audit/" not in annotator_page
