"""Start run and Start triage ask first (hx-confirm, as removing a member does), in words: how many samples, at most
how many calls, the cache, the prices; a script's plain POST still starts at once."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Batch, Project
from judging.confirm import run_question, triage_question
from judging.models import AuditItem, Judge, JudgeRun, JudgingSettings, SyntheticItem, SyntheticSet
from judging.services.judges import update_judging_settings
from tests.annotate.results_scene import HTMX, Tags
from tests.conftest import login
from tests.judging.run_factories import add_samples
from tests.judging.tiny_nli import tiny_nli_fixture  # noqa: F401  (the tiny_nli_path fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(admin_user: Any) -> Client:
    return login(admin_user)


@pytest.fixture
def scene(project: Project, batch: Batch, tiny_nli_path: str) -> dict[str, Any]:
    """The fixture batch (3 samples), a second batch of 12, one sample in the audit queue, and two judges."""
    more = add_samples(project, 12, batch_name="more")
    AuditItem.objects.create(project=project, sample=more[0])
    rubric = Judge.objects.create(project=project, name="gpt", kind=Judge.Kind.RUBRIC, base_url="http://127.0.0.1:9/v1",
                                  model="gpt-test", max_retries=3, price_input_per_mtok=2.5,
                                  price_output_per_mtok=10)
    nli = Judge.objects.create(project=project, name="hhem", kind=Judge.Kind.NLI, nli_model_path=tiny_nli_path)
    return {"batch": batch, "more": more[0].batch, "rubric": rubric, "nli": nli}


def form_html(html: str, role: str) -> str:
    found = re.search(rf'<form[^>]*data-role="{role}".*?</form>', html, re.S)
    assert found is not None, f"no form {role}"
    return found.group(0)


def options_of(form: str, select: str) -> dict[str, dict[str, str]]:
    """A select's options by value."""
    found = re.search(rf'<select name="{select}".*?</select>', form, re.S)
    assert found is not None, f"no select {select}"
    return {option["value"]: option for option in Tags(found.group(0)).find("option")}


def filled(question: str, count: int) -> str:
    """What run_confirm.js makes of a question for `count` samples (the same rule, for the server's side)."""
    return re.sub(r"\{n ([^|{}]+)\|([^{}]+)\}", lambda m: f"{count} {m[1] if count == 1 else m[2]}", question)


def test_the_run_form_asks_first_and_its_options_carry_the_question_and_the_counts(
    project: Project, admin: Client, scene: dict[str, Any]
) -> None:
    html = admin.get(reverse("judging-judges", args=[project.slug])).content.decode()
    form = form_html(html, "start-run")
    attrs = Tags(form).one("form")
    assert attrs["hx-post"] == reverse("judging-run-start", args=[project.slug]) == attrs["action"]
    assert "data-confirm-counted" in attrs and attrs["hx-confirm"]  # a question even before the script refines it
    assert (attrs["hx-target"], attrs["hx-select"]) == ("#start-run", "#start-run")
    judges = options_of(form, "judge")
    rubric, nli = scene["rubric"], scene["nli"]
    assert unescape(judges[str(rubric.pk)]["data-confirm"]) == run_question(rubric)
    assert unescape(judges[str(nli.pk)]["data-confirm"]) == run_question(nli)
    # The scope's counts are a run's targets: every sample, the audit queue's; a batch has its own count.
    scopes = options_of(form, "scope")
    assert (scopes["all"]["data-samples"], scopes["flagged"]["data-samples"]) == ("15", "1")
    assert "data-samples" not in scopes["batch"]
    batches = options_of(form, "batch")
    assert (batches[str(scene["batch"].pk)]["data-samples"], batches[str(scene["more"].pk)]["data-samples"]) == (
        "3", "12")
    assert "data-samples" not in batches[""]
    assert "judging/run_confirm.js" in html


def test_a_rubric_judge_s_question_says_calls_retries_the_cache_and_its_prices(scene: dict[str, Any]) -> None:
    asked = filled(run_question(scene["rubric"]), 15)
    assert asked.startswith("Start a run of gpt over 15 samples? gpt sends at most 15 calls to gpt-test at "
                            "http://127.0.0.1:9/v1, one per sample")
    assert "retried up to 3 times" in asked
    assert "answered from the cache and not paid again" in asked
    assert "$2.50 in, $10.00 out per million tokens; no upper bound on the cost" in asked
    assert "over 1 sample? gpt sends at most 1 call to" in filled(run_question(scene["rubric"]), 1)
    free = Judge(name="local", kind=Judge.Kind.RUBRIC, model="m", base_url="http://x/v1", max_retries=0)
    assert "is not retried" in run_question(free) and "local has no prices set" in run_question(free)
    nli = filled(run_question(scene["nli"]), 3)
    assert nli == ("Start a run of hhem over 3 samples? hhem runs its NLI model on this server's worker, one "
                   "judgement per sample: no endpoint calls, nothing paid.")
    assert run_question(Judge(name="old", kind=Judge.Kind.IMPORTED)) == ""  # cannot run: nothing to ask


def test_the_triage_form_asks_about_the_first_pass_and_the_explainer(
    project: Project, admin: Client, scene: dict[str, Any]
) -> None:
    url = reverse("judging-judges", args=[project.slug])
    assert "data-confirm=" not in form_html(admin.get(url).content.decode(), "start-triage")  # no first pass yet
    update_judging_settings(project, first_pass=scene["nli"], explainer=scene["rubric"])
    form = form_html(admin.get(url).content.decode(), "start-triage")
    attrs = Tags(form).one("form")
    assert attrs["hx-post"] == reverse("judging-triage-start", args=[project.slug]) and attrs["hx-confirm"]
    asked = filled(unescape(attrs["data-confirm"]), 3)
    assert asked.startswith("Start triage over 3 samples? First pass: hhem runs its NLI model")
    assert "an LLM score of at most 3 or an NLI p below 0.5" in asked
    assert "Then the explainer: gpt sends at most 3 calls more to gpt-test" in asked
    assert "one per flagged output" in asked and "gpt is priced at $2.50 in" in asked
    counts = {value: option["data-samples"] for value, option in options_of(form, "batch").items()}
    assert counts == {"": "15", str(scene["batch"].pk): "3", str(scene["more"].pk): "12"}


def test_a_triage_without_an_explainer_says_none_runs(project: Project, scene: dict[str, Any]) -> None:
    settings = JudgingSettings(project=project, first_pass=scene["rubric"])
    asked = filled(triage_question(settings, None), 2)
    assert "First pass: gpt sends at most 2 calls" in asked and "No explainer runs after it." in asked


def test_start_run_through_htmx_goes_to_the_page_and_a_plain_post_still_starts_at_once(
    project: Project, admin: Client, scene: dict[str, Any], settings: Any
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = False  # queued only
    start = reverse("judging-run-start", args=[project.slug])
    response = admin.post(start, {"judge": scene["nli"].pk, "scope": "all"}, **HTMX)
    assert response.status_code == 200
    # The page whole, without its #runs anchor: a location differing only by it would not load the page.
    assert response["HX-Redirect"] == reverse("judging-judges", args=[project.slug])
    # A script posts without any confirmation: unaffected.
    plain = admin.post(start, {"judge": scene["nli"].pk, "scope": "batch", "batch": scene["more"].pk})
    assert plain.status_code == 302
    assert list(JudgeRun.objects.order_by("pk").values_list("scope", "total")) == [("all", 15), ("batch", 12)]


def test_a_refused_start_through_htmx_answers_the_form_s_section_with_the_error(
    project: Project, admin: Client, scene: dict[str, Any]
) -> None:
    response = admin.post(reverse("judging-run-start", args=[project.slug]),
                          {"judge": scene["nli"].pk, "scope": "batch"}, **HTMX)
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="start-run"' in html and "Choose the batch to judge" in html
    # The refused form still counts its samples, so the next try asks again.
    assert 'data-samples="15"' in form_html(html, "start-run")
    assert not JudgeRun.objects.exists()


def test_start_triage_through_htmx_goes_to_the_page(
    project: Project, admin: Client, scene: dict[str, Any], settings: Any
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = False
    update_judging_settings(project, first_pass=scene["nli"])
    response = admin.post(reverse("judging-triage-start", args=[project.slug]), {"batch": scene["batch"].pk}, **HTMX)
    assert response.status_code == 200 and response["HX-Redirect"].endswith("/judges/")
    assert JudgeRun.objects.get().purpose == JudgeRun.Purpose.FIRST_PASS


def test_a_synthetic_set_s_run_form_asks_too_counting_its_items(
    project: Project, admin: Client, scene: dict[str, Any]
) -> None:
    synthetic = SyntheticSet.objects.create(project=project, name="paper")
    for sample in scene["batch"].samples.all():
        SyntheticItem.objects.create(synthetic_set=synthetic, sample=sample, type=SyntheticItem.Type.GOLD, percent=0,
                                     text=sample.summary)
    html = admin.get(reverse("judging-synthetic-set", args=[project.slug, synthetic.pk])).content.decode()
    form = form_html(html, "start-run")
    attrs = Tags(form).one("form")
    assert attrs["data-samples"] == "3" and attrs["hx-confirm"] and "data-confirm-counted" in attrs
    option = options_of(form, "judge")[str(scene["rubric"].pk)]
    assert filled(unescape(option["data-confirm"]), 3).startswith(
        "Start a run of gpt over 3 synthetic items? gpt sends at most 3 calls to gpt-test")
